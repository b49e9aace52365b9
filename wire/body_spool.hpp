// body_spool: a request body kept in a file instead of memory (a large attachment upload, up to
// max_attachment_size): the HTTP front appends what arrives, the handler reads it back in pieces.
// The file is unnamed (O_TMPFILE, else created and unlinked at once): it goes when the spool does,
// and a crash leaves nothing behind. Not thread-safe; one request's.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "node/error.hpp"

namespace settee {

class body_spool {
 public:
  // A new, empty spool in directory `dir`.
  static result<std::unique_ptr<body_spool>> create(const std::string& dir);
  ~body_spool();
  body_spool(const body_spool&) = delete;
  body_spool& operator=(const body_spool&) = delete;

  // Appends `n` bytes (507 insufficient_storage when the disk is full).
  status append(const char* data, size_t n);
  uint64_t size() const { return size_; }
  // Up to `n` bytes from `offset` into `out` (replaced; fewer at the end).
  status read(uint64_t offset, size_t n, std::string& out) const;

 private:
  body_spool(int fd, std::string dir) : fd_(fd), dir_(std::move(dir)) {}
  int fd_;
  std::string dir_;
  uint64_t size_ = 0;
};

}  // namespace settee
