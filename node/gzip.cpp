#include "node/gzip.hpp"

#include <zlib.h>

namespace settee::gzip {

namespace {
constexpr int gzip_window = 15 + 16;  // zlib: 32 KiB window, gzip header and trailer
}

std::string compress(const std::string& in, int level) {
  z_stream z{};
  if (level < 1 || level > 9) level = Z_DEFAULT_COMPRESSION;
  if (deflateInit2(&z, level, Z_DEFLATED, gzip_window, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(rc == Z_STREAM_END ? z.total_out : 0);
  deflateEnd(&z);
  return out;
}

result<std::string> decompress(const std::string& in, size_t max_out) {
  z_stream z{};
  if (inflateInit2(&z, gzip_window) != Z_OK) return status{errc::internal, "zlib: inflateInit failed"};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_out) {
      inflateEnd(&z);
      return status{errc::too_large, "The decoded body is larger than the configured limit"};
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
  }
  bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return status{errc::bad_request, "The body is not valid gzip"};
  return out;
}

stream::stream(mode m, int level, uint64_t max_out) : mode_(m), z_(new z_stream{}), max_out_(max_out) {
  auto* z = static_cast<z_stream*>(z_);
  if (level < 1 || level > 9) level = Z_DEFAULT_COMPRESSION;
  int rc = m == mode::compress ? deflateInit2(z, level, Z_DEFLATED, gzip_window, 8, Z_DEFAULT_STRATEGY)
                               : inflateInit2(z, gzip_window);
  if (rc != Z_OK) ended_ = true;  // every call then fails
}

stream::~stream() {
  auto* z = static_cast<z_stream*>(z_);
  if (mode_ == mode::compress)
    deflateEnd(z);
  else
    inflateEnd(z);
  delete z;
}

status stream::feed(std::string_view in, std::string& out) {
  return run(in, false, out);
}

status stream::finish(std::string& out) {
  return run({}, true, out);
}

status stream::run(std::string_view in, bool last, std::string& out) {
  auto* z = static_cast<z_stream*>(z_);
  const bool packing = mode_ == mode::compress;
  const status bad{errc::bad_request, "The body is not valid gzip"};
  if (ended_) {
    if (!packing && in.empty() && last) return {};
    return packing ? status{errc::internal, "zlib: the stream ended"} : bad;
  }
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z->avail_in = static_cast<uInt>(in.size());
  char buf[64 * 1024];
  for (;;) {
    z->next_out = reinterpret_cast<Bytef*>(buf);
    z->avail_out = sizeof buf;
    int rc = packing ? deflate(z, last ? Z_FINISH : Z_NO_FLUSH) : inflate(z, Z_NO_FLUSH);
    size_t produced = sizeof buf - z->avail_out;
    out.append(buf, produced);
    total_out_ += produced;
    if (total_out_ > max_out_) return {errc::too_large, "The decoded body is larger than the configured limit"};
    if (rc == Z_STREAM_END) {
      ended_ = true;
      if (!packing && z->avail_in > 0) return bad;  // trailing bytes
      return {};
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) return packing ? status{errc::internal, "zlib: deflate failed"} : bad;
    if (z->avail_in == 0 && (produced < sizeof buf || rc == Z_BUF_ERROR)) {
      if (last && !packing) return bad;  // truncated: the end never came
      if (!last) return {};
    }
  }
}

}  // namespace settee::gzip
