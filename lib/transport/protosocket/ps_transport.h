/* The protosocket transport (ps_transport.c): get, set and delete over
 * Momento's protosocket protocol (docs/transport.md "Protosocket"),
 * plugged into the seam (transport/transport.h) beside gRPC. Its own I/O
 * thread runs an epoll loop over a small pool of connections; attempts end
 * there and reach the client's completion thread through the engine's
 * post(). */
#ifndef MOMENTO_PS_TRANSPORT_H
#define MOMENTO_PS_TRANSPORT_H

#include "model/config.h"
#include "model/credentials.h"
#include "transport/transport.h"

/* Opens the transport for the client's config and credentials (read
 * during the call only): resolves nothing and connects nothing yet (each
 * connection is made on first use). Returns 0 with *ret set (its ops'
 * shutdown() and close() undo it), MOMENTO_ERR_INVALID_ARGUMENT (local
 * credentials without a protosocket endpoint; momento_refusal_reason()
 * says why) or MOMENTO_ERR_NO_MEMORY. */
int momento__ps_transport_new(momento__transport **ret, const momento_config *cfg,
                              const momento_credentials *creds);

extern const momento__transport_ops momento__ps_ops;

#endif
