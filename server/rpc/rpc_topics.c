/* Momento Topics' two RPCs, Publish and Subscribe (docs/server.md
 * "Topics"): the checks, with Momento's statuses, before topics.c
 * publishes or opens the subscription. The dispatcher has found the cache
 * the request's cache_name names. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "core/srv_topics.h"
#include "core/srv_webhooks.h"

#include "cachepubsub.pb-c.h"

#include <inttypes.h>
#include <string.h>

/* protobuf-c decodes an absent string as "". */
bool srv_check_topic(srv_reply *r, const char *topic)
{
    size_t len = topic ? strlen(topic) : 0;
    if (len == 0 || strspn(topic, " \t\r\n\v\f") == len) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        len ? "topic name must not be blank" : "topic name must not be empty");
        return false;
    }
    if (len > SRV_TOPIC_NAME_MAX_BYTES) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "topic name must be at most %u bytes", SRV_TOPIC_NAME_MAX_BYTES);
        return false;
    }
    if (!momento__local_utf8_valid(topic, len)) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "topic name must be valid UTF-8");
        return false;
    }
    return true;
}

void srv_topic_publish(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    const CacheClient__Pubsub__PublishRequest *req =
        (const CacheClient__Pubsub__PublishRequest *)msg;
    if (!srv_check_topic(r, req->topic))
        return;
    const CacheClient__Pubsub__TopicValue *v = req->value;
    size_t len;
    if (v && v->kind_case == CACHE_CLIENT__PUBSUB____TOPIC_VALUE__KIND_TEXT) {
        len = strlen(v->text);
        if (!momento__local_utf8_valid(v->text, len)) {
            srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                            "topic value text must be valid UTF-8");
            return;
        }
    } else if (v && v->kind_case == CACHE_CLIENT__PUBSUB____TOPIC_VALUE__KIND_BINARY) {
        len = v->binary.len;
    } else {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "topic value must be text or binary");
        return;
    }
    if (len > s->opts.max_item_bytes) {
        /* "request limit": the words official SDKs look for when they
         * read the message rather than the `err` trailer. */
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "request_size_limit_exceeded",
                        "topic value of %zu bytes exceeds the request limit of %" PRIu64 " bytes",
                        len, s->opts.max_item_bytes);
        return;
    }
    uint64_t seq = 0;
    int rc = srv_topics_publish(s, c->name, req->topic, &v->base, &seq);
    if (rc == SRV_TOPICS_TOO_BIG) {
        /* As for an item that could never fit (reply.c). */
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "item_size_limit_exceeded",
                        "topic item of %zu bytes exceeds what the server's memory limit of %" PRIu64
                        " bytes can hold (item size)",
                        len, s->store.max_bytes);
        return;
    }
    if (rc != 0) {
        /* The rest of the memory is held by what cannot give way: items
         * being written, subscriptions and their queues. */
        srv_reply_no_memory(r);
        return;
    }
    /* Queued for the topic's webhooks, never waited for. */
    bool text = v->kind_case == CACHE_CLIENT__PUBSUB____TOPIC_VALUE__KIND_TEXT;
    srv_webhooks_publish(s, c->name, req->topic, text ? (const void *)v->text : v->binary.data,
                         len, text, seq);
    /* common._Empty: no bytes. */
    srv_reply_add_static(r, (const uint8_t *)"", 0);
}

void srv_topic_subscribe(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                         srv_reply *r)
{
    const CacheClient__Pubsub__SubscriptionRequest *req =
        (const CacheClient__Pubsub__SubscriptionRequest *)msg;
    if (!srv_check_topic(r, req->topic))
        return;
    srv_attachment sub;
    int rc = srv_topics_subscribe(s, c->name, req->topic, req->resume_at_topic_sequence_number,
                                  req->sequence_page, &sub);
    if (rc == SRV_TOPICS_FULL) {
        srv_reply_error(r, GRPC_STATUS_RESOURCE_EXHAUSTED, "topic_subscriptions_limit_exceeded",
                        "topic subscriptions limit exceeded: %u subscribers on this topic",
                        s->opts.max_subscribers);
    } else if (rc < 0) {
        srv_reply_no_memory(r);
    } else {
        /* calls.c sends what the subscription queues, from its heartbeat
         * on, as the stream the reply's attachment becomes. */
        srv_reply_attach(r, sub);
    }
}
