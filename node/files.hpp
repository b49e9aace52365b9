// files: small whole files written so that a crash leaves either the old or the new content.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee {

// Writes `text` to `path` through "<path>.tmp": write, fsync, rename over `path`, fsync the
// directory. After a crash (of the process or the machine) `path` holds the old or the new text.
// A new file gets `mode`; an existing one keeps its mode, owner and group (one another user owns,
// that this process may not give back to them, is rewritten in place instead).
status replace_file(const std::string& path, std::string_view text, int mode = 0600);

// Renames `from` over `to`, then fsyncs the directory of `to`: after a crash `to` is the old file
// or the new one. `from` should be synced first (sync_file).
status rename_durably(const std::string& from, const std::string& to);

// fsync of the file at `path`.
status sync_file(const std::string& path);

// The whole content of `path`; nullopt when it cannot be read (missing, unreadable).
std::optional<std::string> read_file(const std::string& path);

}  // namespace settee
