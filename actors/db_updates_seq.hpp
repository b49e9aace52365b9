// db_updates_seq: the opaque tokens of `_db_updates`, "<sum>-<base64url(payload)>" like _changes'
// (clustered_seq.hpp), naming a position in every node's part of the feed: in its catalog's
// database events (a `_dbs` seq and an index within it) and in its update log (a seq), each with
// the first digits of the file's uuid, so that a token is only taken where it was issued.
//
// Payload: byte 'U', byte version 1, varint entry count, then per entry: str node, str catalog uuid
// prefix, varint catalog seq, varint event index, varint catalog time, str log uuid prefix, varint
// log seq. A node whose position has `seen` catalog events or `marks` (actors/node_updates.hpp) is
// followed by an entry named "~seen" that carries them in its log uuid string (varint count, then
// per event 8 bytes of id and varint seconds before the catalog time; varint count, then per mark
// str node, str catalog uuid prefix, varint seq, varint index) and zeros elsewhere: releases before 0.4
// take it for a member they do not know and pass over it, so tokens still go both ways between
// releases in a rolling upgrade or downgrade. From 0.4 a last entry named "~check" carries the CRC-32
// of the payload before it (8 hex digits in its log uuid string), and <sum> (dbs and log seqs added)
// is checked: a corrupted token is a 400, never another position. Tokens of 0.3 (no check entry)
// are still taken; 0.3 passes over the check entry as over "~seen".
// Pure functions, no I/O.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/node_updates.hpp"
#include "node/error.hpp"

namespace settee {

std::string encode_db_updates_seq(const std::vector<node_updates_pos>& nodes);
// Anything that is not such a token (a _changes token included) is errc::bad_request.
result<std::vector<node_updates_pos>> decode_db_updates_seq(std::string_view token);

}  // namespace settee
