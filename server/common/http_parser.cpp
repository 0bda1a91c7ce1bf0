#include "server/common/http_parser.hpp"

#include <cstring>
#include <llhttp.h>

namespace platoon::http {

struct Parser::Impl {
  llhttp_t p;
  llhttp_settings_t settings;
  Parser* owner;
  Kind kind;
  size_t max_header_bytes;
  size_t max_body_bytes;
  bool in_content_type_field = false;
  bool last_was_value = false;
  std::string field;
  bool complete = false;
  bool too_large_headers = false;
  bool too_large_body = false;
};

namespace {
Parser::Impl* impl_of(llhttp_t* p) { return static_cast<Parser::Impl*>(p->data); }

int count_header(Parser::Impl* im, size_t n) {
  im->owner->message().header_bytes += n;
  if (im->owner->message().header_bytes > im->max_header_bytes) {
    im->too_large_headers = true;
    return HPE_USER;
  }
  return HPE_OK;
}

int on_message_begin(llhttp_t* p) {
  Parser::Impl* im = impl_of(p);
  im->owner->message() = Message{};
  im->field.clear();
  im->last_was_value = false;
  return HPE_OK;
}
int on_url(llhttp_t* p, const char* at, size_t n) {
  impl_of(p)->owner->message().url.append(at, n);
  return count_header(impl_of(p), n);
}
int on_method(llhttp_t* p, const char* at, size_t n) {
  impl_of(p)->owner->message().method.append(at, n);
  return count_header(impl_of(p), n);
}
int on_status(llhttp_t* p, const char*, size_t n) { return count_header(impl_of(p), n); }
int on_header_field(llhttp_t* p, const char* at, size_t n) {
  Parser::Impl* im = impl_of(p);
  if (im->last_was_value) { im->field.clear(); im->last_was_value = false; }
  im->field.append(at, n);
  return count_header(im, n);
}
int on_header_value(llhttp_t* p, const char* at, size_t n) {
  Parser::Impl* im = impl_of(p);
  im->last_was_value = true;
  if (im->field.size() == 12 && strncasecmp(im->field.c_str(), "content-type", 12) == 0)
    im->owner->message().content_type.append(at, n);
  return count_header(im, n);
}
int on_headers_complete(llhttp_t* p) {
  Parser::Impl* im = impl_of(p);
  Message& m = im->owner->message();
  m.status = llhttp_get_status_code(p);
  if (im->kind == Parser::Kind::request && m.method.empty())
    m.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(p)));
  if (p->content_length > im->max_body_bytes && p->content_length != UINT64_MAX) {
    im->too_large_body = true;
    return -1;
  }
  return HPE_OK;
}
int on_body(llhttp_t* p, const char* at, size_t n) {
  Parser::Impl* im = impl_of(p);
  Message& m = im->owner->message();
  if (m.body.size() + n > im->max_body_bytes) {
    im->too_large_body = true;
    return HPE_USER;
  }
  m.body.append(at, n);
  return HPE_OK;
}
int on_message_complete(llhttp_t* p) {
  Parser::Impl* im = impl_of(p);
  im->owner->message().keep_alive = llhttp_should_keep_alive(p) != 0;
  im->complete = true;
  return HPE_PAUSED;  // hand one message at a time to the caller
}
}  // namespace

Parser::Parser(Kind kind, size_t max_header_bytes, size_t max_body_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->owner = this;
  impl_->kind = kind;
  impl_->max_header_bytes = max_header_bytes;
  impl_->max_body_bytes = max_body_bytes;
  llhttp_settings_init(&impl_->settings);
  impl_->settings.on_message_begin = on_message_begin;
  impl_->settings.on_url = on_url;
  impl_->settings.on_method = on_method;
  impl_->settings.on_status = on_status;
  impl_->settings.on_header_field = on_header_field;
  impl_->settings.on_header_value = on_header_value;
  impl_->settings.on_headers_complete = on_headers_complete;
  impl_->settings.on_body = on_body;
  impl_->settings.on_message_complete = on_message_complete;
  llhttp_init(&impl_->p, kind == Kind::request ? HTTP_REQUEST : HTTP_RESPONSE, &impl_->settings);
  impl_->p.data = impl_.get();
}

Parser::~Parser() = default;

Parser::Status Parser::parse(const char* data, size_t len, size_t& consumed) {
  consumed = 0;
  if (error_status_) return Status::error;
  impl_->complete = false;
  const llhttp_errno_t err = llhttp_execute(&impl_->p, data, len);
  if (err == HPE_OK) {
    consumed = len;
    return Status::need_more;
  }
  if (err == HPE_PAUSED && impl_->complete) {
    consumed = static_cast<size_t>(llhttp_get_error_pos(&impl_->p) - data);
    llhttp_resume(&impl_->p);
    return Status::message;
  }
  if (impl_->too_large_headers) {
    error_status_ = 431;
    error_ = "request header fields too large";
  } else if (impl_->too_large_body) {
    error_status_ = 413;
    error_ = "content too large";
  } else {
    error_status_ = 400;
    error_ = std::string(llhttp_errno_name(err)) + ": " + std::string(llhttp_get_error_reason(&impl_->p) ? llhttp_get_error_reason(&impl_->p) : "");
  }
  return Status::error;
}

Parser::Status Parser::finish() {
  impl_->complete = false;
  const llhttp_errno_t err = llhttp_finish(&impl_->p);
  if (impl_->complete) return Status::message;
  if (err == HPE_OK) return Status::need_more;
  error_status_ = 400;
  error_ = llhttp_errno_name(err);
  return Status::error;
}

}  // namespace platoon::http
