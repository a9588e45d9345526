// Client over libcurl (client.hpp). Every transfer runs through one multi handle per Client, so that
// connections are reused between requests and a transfer can be polled for its stop condition while the
// server says nothing (curl_multi_poll with the poll interval as its timeout).

#include "kube/client.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "kube/curl_library.hpp"
#include "kube/kubeconfig.hpp"
#include "kube/request_cancel.hpp"
#include "kube/wire.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::kube {
namespace {

constexpr long k_connect_timeout_ms = 10'000;
// A GET of one object, or a list of a few thousand: far below a minute on a live server.
constexpr long k_request_timeout_ms = 60'000;
// How often a request (not a watch) checks its thread's RequestCancel.
constexpr std::chrono::milliseconds k_request_poll{200};
// The most bytes of a refused watch's answer kept for its message (a Status is a few hundred).
constexpr size_t k_max_error_body = 64 * 1024;
// The largest PEM file read (a CA bundle can hold a few hundred certificates).
constexpr size_t k_max_pem = 4 * 1024 * 1024;

struct EasyDeleter {
  void operator()(CURL* handle) const { curl().easy_cleanup(handle); }
};
struct MultiDeleter {
  void operator()(CURLM* handle) const { curl().multi_cleanup(handle); }
};
struct ListDeleter {
  void operator()(curl_slist* list) const { curl().slist_free_all(list); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Multi = std::unique_ptr<CURLM, MultiDeleter>;
using Headers = std::unique_ptr<curl_slist, ListDeleter>;

// The identity of the token file's content: the kubelet replaces a projected token by renaming a new
// folder into place, which changes the inode; an edit in place changes the size or time.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  bool operator==(const FileStamp& other) const {
    return dev == other.dev && ino == other.ino && size == other.size && mtime.tv_sec == other.mtime.tv_sec &&
           mtime.tv_nsec == other.mtime.tv_nsec;
  }
};

thread_local const std::atomic<bool>* t_cancel = nullptr;

struct Outcome {
  CURLcode code = CURLE_OK;
  bool stopped = false;
};

// A full answer, bounded by k_max_body.
struct Answer {
  long status = 0;
  std::string body;
  bool too_large = false;
};

size_t collect(char* data, size_t size, size_t count, void* user) {
  auto* answer = static_cast<Answer*>(user);
  const size_t bytes = size * count;
  if (answer->body.size() + bytes > k_max_body) {
    answer->too_large = true;
    return 0;  // curl ends the transfer (CURLE_WRITE_ERROR)
  }
  answer->body.append(data, bytes);
  return bytes;
}

// A watch's answer as it arrives: events to the caller, or a refusal's body kept for its message.
struct WatchSink {
  CURL* easy = nullptr;
  std::string what;
  const std::function<bool(const WatchEvent&)>* on_event = nullptr;
  long status = 0;
  std::string error_body;
  WatchDecoder decoder;
  std::optional<ApiError> error;
  bool finished = false;  // on_event said stop, or an ERROR event came
};

bool deliver(WatchSink& sink, const WatchEvent& event) {
  if (event.type == "ERROR") {
    sink.error = status_error(sink.what, event.object);
    return false;
  }
  return (*sink.on_event)(event);
}

size_t stream(char* data, size_t size, size_t count, void* user) {
  auto& sink = *static_cast<WatchSink*>(user);
  const size_t bytes = size * count;
  if (sink.status == 0) {
    curl().easy_getinfo(sink.easy, CURLINFO_RESPONSE_CODE, &sink.status);
  }
  if (sink.status / 100 != 2) {
    sink.error_body.append(
        data, std::min(bytes, k_max_error_body - std::min(k_max_error_body, sink.error_body.size())));
    return bytes;
  }
  const auto more =
      sink.decoder.feed({data, bytes}, [&](const WatchEvent& event) { return deliver(sink, event); });
  if (!more) {
    sink.error = ApiError{0, sink.what + ": " + more.error().message};
    return 0;
  }
  if (!*more) {
    sink.finished = true;
    return 0;
  }
  return bytes;
}

std::optional<FileStamp> stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return FileStamp{st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

Result<void> check_readable(const std::string& path, std::string_view what) {
  if (path.empty()) {
    return {};
  }
  auto text = read_regular_at(AT_FDCWD, path.c_str(), path, k_max_pem);
  if (!text) {
    return fail_with(what, text.error());
  }
  if (!*text) {
    return fail_errno(std::string(what) + ": read " + path, ENOENT);
  }
  return {};
}

}  // namespace

RequestCancel::RequestCancel(const std::atomic<bool>& flag) : m_previous(t_cancel) {
  t_cancel = &flag;
}
RequestCancel::~RequestCancel() {
  t_cancel = m_previous;
}
bool RequestCancel::cancelled() {
  return t_cancel != nullptr && t_cancel->load();
}

// One Client's handles and token. A Client is used by one thread at a time (ObjectWatch owns its own).
struct Client::State {
  Credentials credentials;
  std::string token;
  std::optional<FileStamp> token_stamp;
  Multi multi;
  Easy easy;

  // The token in use: the token file's (read again when it changed, or always with `force`), else the
  // inline token.
  Result<void> refresh_token(bool force);
  // After a 401: whether the token file now holds another token (worth one more try).
  bool token_rotated();
  Result<Headers> headers(std::string_view content_type) const;
  Result<void> configure(CURL* easy, const std::string& path, curl_slist* headers, char* error_buffer) const;
  Outcome perform(const std::function<bool()>& stop, std::chrono::milliseconds poll);
  ApiResult<Answer> exchange(const std::string& what, std::string_view method, std::string_view path,
                             const std::string* payload, std::string_view content_type);
  ApiResult<void> stream_events(const std::string& what, const std::string& path,
                                const std::function<bool(const WatchEvent&)>& on_event,
                                const std::function<bool()>& stop, std::chrono::milliseconds poll);
};

Result<void> Client::State::refresh_token(bool force) {
  if (credentials.token_file.empty()) {
    token = credentials.token;
    return {};
  }
  const std::optional<FileStamp> stamp = stamp_of(credentials.token_file);
  if (!force && stamp && stamp == token_stamp && !token.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(auto text, read_regular_at(AT_FDCWD, credentials.token_file.c_str(),
                                               credentials.token_file, k_max_token));
  if (!text) {
    return fail_errno("read " + credentials.token_file, ENOENT);
  }
  auto checked = check_token(*text);
  if (!checked) {
    return fail_with("token file " + credentials.token_file, checked.error());
  }
  token = std::move(*checked);
  token_stamp = stamp;
  return {};
}

bool Client::State::token_rotated() {
  if (credentials.token_file.empty()) {
    return false;
  }
  const std::string before = token;
  return refresh_token(true) && token != before;
}

Result<Headers> Client::State::headers(std::string_view content_type) const {
  if (content_type.find_first_of("\r\n") != std::string_view::npos) {
    return fail("content type " + escape_for_log(content_type, 200) + " holds a line break");
  }
  Headers list;
  bool complete = true;
  const auto add = [&](const std::string& line) {
    curl_slist* grown = curl().slist_append(list.get(), line.c_str());  // the same head, or a new list
    if (grown == nullptr) {
      complete = false;
    } else if (grown != list.get()) {
      list.reset(grown);
    }
  };
  add("Accept: application/json");
  add("User-Agent: gpuctk/" GPUCTK_VERSION);
  add("Expect:");  // no 100-continue round trip for a PUT or PATCH
  if (!content_type.empty()) {
    add("Content-Type: " + std::string(content_type));
  }
  if (!token.empty()) {
    add("Authorization: Bearer " + token);
  }
  if (!list || !complete) {
    return fail("out of memory for the request's headers");
  }
  return list;
}

Result<void> Client::State::configure(CURL* handle, const std::string& path, curl_slist* header_list,
                                      char* error_buffer) const {
  CURLcode status = CURLE_OK;
  const auto set = [&](CURLoption option, auto value) {
    if (const CURLcode code = curl().easy_setopt(handle, option, value);
        code != CURLE_OK && status == CURLE_OK) {
      status = code;
    }
  };
  const std::string url = credentials.server + path;
  set(CURLOPT_URL, url.c_str());
  set(CURLOPT_ERRORBUFFER, error_buffer);
  set(CURLOPT_PROTOCOLS_STR, "https");  // the token never travels in clear
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name resolution timeouts
  set(CURLOPT_PROXY, "");     // the API server is reached directly, whatever https_proxy says
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  set(CURLOPT_CONNECTTIMEOUT_MS, k_connect_timeout_ms);
  // A watch may be quiet for minutes: keepalive probes find a peer that is gone.
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_TCP_KEEPIDLE, 30L);
  set(CURLOPT_TCP_KEEPINTVL, 15L);
  set(CURLOPT_HTTPHEADER, header_list);
  if (!credentials.ca_pem.empty() || !credentials.ca_file.empty()) {
    // The cluster's CA alone, as client-go's RootCAs: not the system's CAs beside it.
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!credentials.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(credentials.ca_pem.data()), credentials.ca_pem.size(), CURL_BLOB_COPY};
    set(CURLOPT_CAINFO_BLOB, &blob);
  } else if (!credentials.ca_file.empty()) {
    set(CURLOPT_CAINFO, credentials.ca_file.c_str());
  }
  if (!credentials.client_cert_pem.empty()) {
    curl_blob blob{const_cast<char*>(credentials.client_cert_pem.data()), credentials.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLCERT_BLOB, &blob);
    set(CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!credentials.client_cert_file.empty()) {
    set(CURLOPT_SSLCERT, credentials.client_cert_file.c_str());
  }
  if (!credentials.client_key_pem.empty()) {
    curl_blob blob{const_cast<char*>(credentials.client_key_pem.data()), credentials.client_key_pem.size(),
                   CURL_BLOB_COPY};
    set(CURLOPT_SSLKEY_BLOB, &blob);
    set(CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!credentials.client_key_file.empty()) {
    set(CURLOPT_SSLKEY, credentials.client_key_file.c_str());
  }
  if (status != CURLE_OK) {
    return fail(std::string("libcurl refused an option: ") + curl().easy_strerror(status));
  }
  return {};
}

Outcome Client::State::perform(const std::function<bool()>& stop, std::chrono::milliseconds poll) {
  Outcome out;
  if (curl().multi_add_handle(multi.get(), easy.get()) != CURLM_OK) {
    out.code = CURLE_FAILED_INIT;
    return out;
  }
  int running = 1;
  while (true) {
    if (curl().multi_perform(multi.get(), &running) != CURLM_OK) {
      out.code = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int left = 0;
      while (CURLMsg* message = curl().multi_info_read(multi.get(), &left)) {
        if (message->msg == CURLMSG_DONE) {
          out.code = message->data.result;
        }
      }
      break;
    }
    if (stop && stop()) {
      out.stopped = true;
      break;
    }
    curl().multi_poll(multi.get(), nullptr, 0, static_cast<int>(poll.count()), nullptr);
  }
  curl().multi_remove_handle(multi.get(), easy.get());
  return out;
}

ApiResult<Answer> Client::State::exchange(const std::string& what, std::string_view method,
                                          std::string_view path, const std::string* payload,
                                          std::string_view content_type) {
  const auto failed = [&](const std::string& message) {
    return std::unexpected(ApiError{0, what + ": " + message});
  };
  if (auto refreshed = refresh_token(false); !refreshed) {
    return failed(refreshed.error().message);
  }
  auto header_list = headers(payload != nullptr ? content_type : "");
  if (!header_list) {
    return failed(header_list.error().message);
  }
  curl().easy_reset(easy.get());
  char error_buffer[CURL_ERROR_SIZE] = "";
  if (auto configured = configure(easy.get(), std::string(path), header_list->get(), error_buffer);
      !configured) {
    return failed(configured.error().message);
  }
  Answer answer;
  const std::string verb(method);
  curl().easy_setopt(easy.get(), CURLOPT_CUSTOMREQUEST, verb.c_str());
  if (payload != nullptr) {
    curl().easy_setopt(easy.get(), CURLOPT_POSTFIELDS, payload->c_str());
    curl().easy_setopt(easy.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload->size()));
  }
  curl().easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, k_request_timeout_ms);
  curl().easy_setopt(easy.get(), CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(k_max_body));
  curl().easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, collect);
  curl().easy_setopt(easy.get(), CURLOPT_WRITEDATA, &answer);
  const Outcome outcome = perform([] { return RequestCancel::cancelled(); }, k_request_poll);
  if (outcome.stopped) {
    return failed("cancelled");
  }
  if (answer.too_large || outcome.code == CURLE_FILESIZE_EXCEEDED) {
    return failed("answer larger than " + std::to_string(k_max_body) + " bytes");
  }
  if (outcome.code != CURLE_OK) {
    return failed(error_buffer[0] != '\0' ? error_buffer : curl().easy_strerror(outcome.code));
  }
  curl().easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

ApiResult<void> Client::State::stream_events(const std::string& what, const std::string& path,
                                             const std::function<bool(const WatchEvent&)>& on_event,
                                             const std::function<bool()>& stop,
                                             std::chrono::milliseconds poll) {
  const auto failed = [&](const std::string& message) {
    return std::unexpected(ApiError{0, what + ": " + message});
  };
  if (auto refreshed = refresh_token(false); !refreshed) {
    return failed(refreshed.error().message);
  }
  auto header_list = headers("");
  if (!header_list) {
    return failed(header_list.error().message);
  }
  curl().easy_reset(easy.get());
  char error_buffer[CURL_ERROR_SIZE] = "";
  if (auto configured = configure(easy.get(), path, header_list->get(), error_buffer); !configured) {
    return failed(configured.error().message);
  }
  WatchSink sink;
  sink.easy = easy.get();
  sink.what = what;
  sink.on_event = &on_event;
  curl().easy_setopt(easy.get(), CURLOPT_HTTPGET, 1L);
  curl().easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, stream);
  curl().easy_setopt(easy.get(), CURLOPT_WRITEDATA, &sink);
  const Outcome outcome = perform(stop, poll);
  if (outcome.stopped) {
    return {};
  }
  if (sink.error) {
    return std::unexpected(std::move(*sink.error));
  }
  if (sink.finished) {
    return {};
  }
  if (outcome.code != CURLE_OK) {
    return failed(error_buffer[0] != '\0' ? error_buffer : curl().easy_strerror(outcome.code));
  }
  curl().easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &sink.status);
  if (sink.status / 100 != 2) {
    return std::unexpected(api_error(what, sink.status, sink.error_body));
  }
  if (sink.decoder.pending()) {
    return failed("the stream ended inside an event");
  }
  return {};
}

Result<Client> Client::create(Credentials credentials) {
  GPUCTK_TRY(load_curl());  // libcurl is loaded by the first Client, not at the daemon's start
  if (!credentials.server.starts_with("https://")) {
    return fail("server " + quote(credentials.server) + ": only https:// is supported");
  }
  GPUCTK_TRY(check_readable(credentials.ca_file, "certificate authority"));
  GPUCTK_TRY(check_readable(credentials.client_cert_file, "client certificate"));
  GPUCTK_TRY(check_readable(credentials.client_key_file, "client key"));
  while (credentials.server.ends_with('/')) {  // paths start with "/"
    credentials.server.pop_back();
  }
  auto state = std::make_unique<State>();
  state->credentials = std::move(credentials);
  state->multi.reset(curl().multi_init());
  state->easy.reset(curl().easy_init());
  if (!state->multi || !state->easy) {
    return fail("libcurl: cannot make a handle");
  }
  GPUCTK_TRY(state->refresh_token(true));
  return Client(std::move(state));
}

Client::Client(std::unique_ptr<State> state) : m_state(std::move(state)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

const Credentials& Client::credentials() const {
  return m_state->credentials;
}

ApiResult<nlohmann::json> Client::request(std::string_view method, std::string_view path,
                                          const nlohmann::json* body, std::string_view content_type) {
  const std::string what = std::string(method) + " " + std::string(path);
  if (!path.starts_with('/')) {
    return std::unexpected(ApiError{0, what + ": the path does not start with /"});
  }
  const std::string payload = body != nullptr ? body->dump() : std::string();
  for (int attempt = 0;; ++attempt) {
    auto answer = m_state->exchange(what, method, path, body != nullptr ? &payload : nullptr, content_type);
    if (!answer) {
      return std::unexpected(std::move(answer).error());
    }
    if (answer->status == 401 && attempt == 0 && m_state->token_rotated()) {
      continue;  // the kubelet rotated the token since it was read: once more with the new one
    }
    if (answer->status / 100 != 2) {
      return std::unexpected(api_error(what, answer->status, answer->body));
    }
    if (answer->body.empty()) {
      return nlohmann::json::object();
    }
    nlohmann::json parsed = nlohmann::json::parse(answer->body, nullptr, false);
    if (parsed.is_discarded()) {
      return std::unexpected(ApiError{answer->status, what + ": the answer is not JSON"});
    }
    return parsed;
  }
}

ApiResult<void> Client::watch(std::string_view path, std::string_view resource_version,
                              const std::function<bool(const WatchEvent&)>& on_event,
                              const std::function<bool()>& stop, std::chrono::milliseconds poll) {
  std::string full(path);
  full += path.find('?') == std::string_view::npos ? '?' : '&';
  full += "watch=1&allowWatchBookmarks=true";
  if (!resource_version.empty()) {
    char* escaped = curl().easy_escape(m_state->easy.get(), resource_version.data(),
                                       static_cast<int>(resource_version.size()));
    full += "&resourceVersion=";
    full += escaped != nullptr ? escaped : "";
    curl().free(escaped);
  }
  const std::string what = "watch " + full;
  if (!path.starts_with('/')) {
    return std::unexpected(ApiError{0, what + ": the path does not start with /"});
  }
  for (int attempt = 0;; ++attempt) {
    auto result = m_state->stream_events(what, full, on_event, stop, poll);
    if (!result && result.error().status == 401 && attempt == 0 && m_state->token_rotated()) {
      continue;
    }
    return result;
  }
}

}  // namespace gpuctk::kube
