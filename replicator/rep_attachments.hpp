// rep_attachments: which attachments of a revision a replication must send with their bytes (pure).
// The target already holds every attachment the revision shares with an ancestor it has: as
// couch_doc's atts_since, the newest revision of the document's path that is among the target's
// possible ancestors gives a generation, and only attachments with a higher revpos need their
// bytes (the others travel as stubs).
#pragma once
#include <cstdint>

#include "node/json.hpp"

namespace settee {

struct attachments_needed {
  uint64_t count = 0;  // attachments that need their bytes
  uint64_t bytes = 0;  // their size (the larger of length and encoded_length)
};

// For `doc` as `_bulk_get?revs=true&attachments=false` gives it (stubs with revpos and length,
// `_revisions`), and the target's possible ancestors ("N-hash" strings, null for none).
attachments_needed attachments_to_send(const json& doc, const json& possible_ancestors);

}  // namespace settee
