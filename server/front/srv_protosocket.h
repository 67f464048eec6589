/* The protosocket port (protosocket.c): Momento's second protocol for
 * Authenticate, Get, Set and Delete (PROTOSOCKET.md, docs/server.md
 * "Protosocket port"), served by a thread of its own with an epoll loop,
 * against the same store and through the same dispatcher as the gRPC
 * calls (s->dispatch), taking the server's turn for each batch of
 * commands (srv_turns.h). The public side is momento_local_protosocket_*()
 * (momento/local.h), defined there too. */
#ifndef MOMENTO_LOCAL_SRV_PROTOSOCKET_H
#define MOMENTO_LOCAL_SRV_PROTOSOCKET_H

struct momento_local;

/* After srv_calls_start() (it dispatches through s->dispatch): binds the
 * options' protosocket port on the bind address, TLS when the options have
 * a certificate, and starts its thread. Nothing happens when the port is
 * off (-1). Returns MOMENTO_OK, MOMENTO_ERR_SERVER_UNAVAILABLE (the port
 * could not be bound), MOMENTO_ERR_INVALID_ARGUMENT (the certificate or
 * key could not be used) or MOMENTO_ERR_NO_MEMORY; on failure nothing is
 * left open. */
int srv_protosocket_start(struct momento_local *s);
/* Before srv_calls_stop(): answers the commands still held UNAVAILABLE (as
 * far as their connections take them without waiting), closes every
 * connection and the port, joins the thread and frees it all. Harmless
 * when the port is off or never started. */
void srv_protosocket_stop(struct momento_local *s);

#endif
