// clock-ping.so: one HTTP request with libcurl, behind a C entry point that
// clock loads (dlopen) only for a run that pings (notify/ping.cpp). libcurl
// and its libraries (TLS, HTTP/2, IDN…) then cost nothing to a run that
// does not ping, as libpq costs nothing to a SQLite run.
#include "notify/module/ping_module.h"

#include <cstdio>
#include <curl/curl.h>
#include <string>

extern "C" {

const char clock_ping_module_abi[] = CLOCK_PING_ABI;

namespace {

// The reply's body is not wanted, only its status.
size_t discard(char*, size_t size, size_t count, void*) {
  return size * count;
}

void set_error(char* error, size_t error_size, const char* text) {
  if (error && error_size > 0)
    std::snprintf(error, error_size, "%s", text);
}

}  // namespace

long clock_ping_send(const char* url, const char* body, size_t body_size, long timeout_ms,
                     const char* user_agent, char* error, size_t error_size) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialised) {
    set_error(error, error_size, "libcurl could not be initialised");
    return -1;
  }
  CURL* curl = curl_easy_init();
  if (!curl) {
    set_error(error, error_size, "libcurl could not start a request");
    return -1;
  }
  char curl_error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
  // http and https only, also on redirects (which are not followed anyway).
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // No signals (SIGALRM for DNS timeouts): clock relays signals to the job.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(body ? body_size : 0));
  struct curl_slist* headers =
      curl_slist_append(nullptr, "Content-Type: text/plain; charset=utf-8");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  long status = -1;
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  } else {
    set_error(error, error_size, curl_error[0] ? curl_error : curl_easy_strerror(rc));
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return status;
}

}  // extern "C"
