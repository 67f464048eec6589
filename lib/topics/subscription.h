/* The library's own subscriptions (subscription.c; the application's are
 * momento/topics.h's). */
#ifndef MOMENTO_TOPICS_SUBSCRIPTION_H
#define MOMENTO_TOPICS_SUBSCRIPTION_H

#include "momento/topics.h"

/* As momento_topic_subscribe() with no reference kept (it runs until an
 * error or the client's free ends it), for the library itself: its events
 * are called at once on the completion thread in every mode, never queued
 * for momento_client_dispatch(), so they do not wait on the application.
 * `cb` must take only the library's own locks and return quickly. */
int momento__topic_subscribe_own(momento_client *c, const char *cache, const char *topic,
                                 const momento_subscribe_options *opts, momento_topic_callback cb,
                                 void *userdata);

#endif
