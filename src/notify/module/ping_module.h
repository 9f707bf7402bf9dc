/* The entry point of clock-ping.so (module/ping_module.cpp), which
   notify/ping.cpp loads with dlopen. Plain C types only: the module shares
   no C++ type with clock. */
#pragma once

#include <stddef.h>

#define CLOCK_PING_ABI "clock-ping 1"

#ifdef __cplusplus
extern "C" {
#endif

/* "clock-ping 1": the module's version of this interface. */
extern const char clock_ping_module_abi[];

/* POSTs `body` (body_size bytes, text/plain) to `url` (http or https) within
   timeout_ms in all, DNS and connect included. Returns the HTTP status, or
   -1 with a one-line reason in `error`. */
long clock_ping_send(const char* url, const char* body, size_t body_size, long timeout_ms,
                     const char* user_agent, char* error, size_t error_size);

#ifdef __cplusplus
}
#endif
