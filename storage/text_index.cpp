#include "storage/text_index.hpp"

#include <lucene++/LuceneHeaders.h>

#include <mutex>

#include "node/files.hpp"

namespace settee {

namespace {

using namespace Lucene;

const wchar_t* const id_field = L"_id";
const wchar_t* const seq_key = L"settee_seq";

String wide(const std::string& s) {
  return StringUtils::toUnicode(s);
}
std::string narrow(const String& s) {
  return StringUtils::toUTF8(s);
}

// A Lucene++ exception as a status: a query Lucene cannot parse is the caller's (400, Lucene's own
// message), anything else the index's.
status failed(const LuceneException& e, const std::string& doing) {
  const std::string message = narrow(e.getError());
  if (e.getType() == LuceneException::Parse || e.getType() == LuceneException::QueryParser ||
      e.getType() == LuceneException::TooManyClauses)
    return {errc::bad_request, message};
  return {errc::internal, "the text index could not " + doing + ": " + message};
}

DocumentPtr lucene_doc(const text_doc& d) {
  DocumentPtr doc = newLucene<Document>();
  doc->add(newLucene<Field>(id_field, wide(d.id), Field::STORE_YES, Field::INDEX_NOT_ANALYZED_NO_NORMS));
  for (const text_field& f : d.fields) {
    const String name = wide(f.name);
    const Field::Store store = f.store ? Field::STORE_YES : Field::STORE_NO;
    switch (f.type) {
      case text_field::kind::text:
        doc->add(newLucene<Field>(name, wide(f.text), store, Field::INDEX_ANALYZED));
        break;
      case text_field::kind::string:
        doc->add(newLucene<Field>(name, wide(f.text), store, Field::INDEX_NOT_ANALYZED_NO_NORMS));
        break;
      case text_field::kind::number:
        doc->add(newLucene<NumericField>(name, store, true)->setDoubleValue(f.number));
        break;
      case text_field::kind::stored:
        doc->add(newLucene<Field>(name, wide(f.text), Field::STORE_YES, Field::INDEX_NO));
        break;
    }
  }
  return doc;
}

uint64_t seq_of(const MapStringString& data) {
  if (!data.contains(seq_key)) return 0;
  try {
    return std::stoull(narrow(data.get(seq_key)));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

struct text_index::impl {
  std::string dir;
  DirectoryPtr directory;
  AnalyzerPtr analyzer;
  IndexWriterPtr writer;
  mutable std::mutex mu;  // guards reader and seq
  IndexReaderPtr reader;  // the last commit's
  uint64_t seq = 0;
};

text_index::text_index(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

text_index::~text_index() {
  try {
    if (impl_->writer) impl_->writer->close();
    if (impl_->reader) impl_->reader->close();
  } catch (const LuceneException&) {  // closing: nothing left to tell
  }
}

result<std::unique_ptr<text_index>> text_index::open(const std::string& dir) {
  auto i = std::make_unique<impl>();
  i->dir = dir;
  try {
    i->directory = FSDirectory::open(wide(dir));
    i->analyzer = newLucene<StandardAnalyzer>(LuceneVersion::LUCENE_30);
    const bool fresh = !IndexReader::indexExists(i->directory);
    i->writer = newLucene<IndexWriter>(i->directory, i->analyzer, fresh, IndexWriter::MaxFieldLengthUNLIMITED);
    if (fresh) {  // an empty commit, so that readers open
      MapStringString data = MapStringString::newInstance();
      data.put(seq_key, L"0");
      i->writer->commit(data);
    }
    i->reader = IndexReader::open(i->directory, true);
    i->seq = seq_of(i->reader->getCommitUserData());
  } catch (const LuceneException& e) {
    return failed(e, "open " + dir);
  }
  return std::unique_ptr<text_index>(new text_index(std::move(i)));
}

uint64_t text_index::seq() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seq;
}

uint64_t text_index::doc_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<uint64_t>(impl_->reader->numDocs());
}

status text_index::apply(const std::vector<text_doc>& docs, uint64_t seq) {
  try {
    for (const text_doc& d : docs) {
      TermPtr id = newLucene<Term>(id_field, wide(d.id));
      if (d.fields.empty())
        impl_->writer->deleteDocuments(id);
      else
        impl_->writer->updateDocument(id, lucene_doc(d));
    }
    MapStringString data = MapStringString::newInstance();
    data.put(seq_key, wide(std::to_string(seq)));
    impl_->writer->commit(data);  // Lucene++ fsyncs the commit's files
    IndexReaderPtr next = impl_->reader->reopen();
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (next != impl_->reader) {
      impl_->reader->decRef();  // searches under way hold their own reference
      impl_->reader = next;
    }
    impl_->seq = seq;
  } catch (const LuceneException& e) {
    return failed(e, "apply a batch");
  }
  // And the directory, so the new commit's file names survive a crash of the machine.
  return sync_file(impl_->dir);
}

result<text_page> text_index::search(const std::string& query, const std::string& default_field, size_t limit) const {
  IndexReaderPtr reader;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    reader = impl_->reader;
    reader->incRef();  // kept open through this search, whatever a commit swaps in
  }
  text_page page;
  status st;
  try {
    QueryParserPtr parser = newLucene<QueryParser>(LuceneVersion::LUCENE_30, wide(default_field), impl_->analyzer);
    QueryPtr q = parser->parse(wide(query));
    SearcherPtr searcher = newLucene<IndexSearcher>(reader);
    TopDocsPtr top = searcher->search(q, static_cast<int32_t>(std::max<size_t>(1, std::min<size_t>(limit, INT32_MAX))));
    page.total_hits = static_cast<uint64_t>(top->totalHits);
    for (const ScoreDocPtr& sd : top->scoreDocs) {
      if (page.hits.size() >= limit) break;
      DocumentPtr doc = searcher->doc(sd->doc);
      text_hit hit;
      hit.id = narrow(doc->get(id_field));
      hit.score = sd->score;
      for (const FieldablePtr& f : doc->getFields())
        if (f->name() != id_field) hit.stored.emplace_back(narrow(f->name()), narrow(f->stringValue()));
      page.hits.push_back(std::move(hit));
    }
  } catch (const LuceneException& e) {
    st = failed(e, "search");
  }
  reader->decRef();
  if (!st) return st;
  return page;
}

}  // namespace settee
