/* Which transports a client opens and which RPC each carries
 * (transports.h): the engine asks here, and only here is a concrete
 * transport named, so a new one is added in this file and its folder. */
#include "transport/transports.h"

#include "transport/grpc/grpc_transport.h"
#include "transport/protosocket/ps_transport.h"

#include <string.h>

int momento__transports_open(momento__transports *ret, const momento_config *cfg,
                             const momento_credentials *creds)
{
    momento__transports ts;
    memset(&ts, 0, sizeof(ts));
    int rc = momento__grpc_transport_new(&ts.loop, cfg, creds);
    if (rc != MOMENTO_OK)
        return rc;
    for (size_t m = 0; m < MOMENTO__RPC_COUNT; m++)
        ts.routes[m] = ts.loop;
    if (cfg->transport == MOMENTO_TRANSPORT_PROTOSOCKET) {
        /* Get, set and delete over protosocket, on its own I/O thread;
         * everything else (streams, batches, the other RPCs) stays on
         * gRPC, which protosocket does not speak. */
        momento__transport *ps;
        rc = momento__ps_transport_new(&ps, cfg, creds);
        if (rc != MOMENTO_OK) {
            ts.loop->ops->close(ts.loop);
            return rc;
        }
        ts.own_thread[ts.n_own_thread++] = ps;
        ts.routes[MOMENTO__RPC_GET] = ps;
        ts.routes[MOMENTO__RPC_SET] = ps;
        ts.routes[MOMENTO__RPC_DELETE] = ps;
        ts.unbatched = true;
    }
    *ret = ts;
    return MOMENTO_OK;
}
