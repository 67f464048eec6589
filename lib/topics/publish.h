/* A topic publish on the wire (publish.c), its arguments checked by the
 * caller: the application's (ops/op_topic.c, which checks them) and the
 * library's own (the near cache's invalidations, layers/near_sync.c),
 * which sits below the operations and so cannot call them. */
#ifndef MOMENTO_TOPICS_PUBLISH_H
#define MOMENTO_TOPICS_PUBLISH_H

#include "engine/call.h"
#include "momento/momento.h"

#include <stdbool.h>
#include <stddef.h>

/* Publishes `value` (`text`: as a text item, else bytes) to `topic` of
 * `cache` with resolved options `co`. Returns as momento__call_start_with():
 * 0 when accepted (exactly one callback follows), an error otherwise. */
int momento__topic_publish_send(momento_client *c, const char *cache, const char *topic,
                                const void *value, size_t value_len, bool text,
                                const momento__call_opts *co, momento_callback cb,
                                void *userdata);

#endif
