/* Topics, the request side: publish (text or bytes), async and blocking -
 * the checks here, the wire in topics/publish.c - and the subscribe
 * decoder of the RPC table. Subscriptions are long-lived streams with
 * their own machinery (subscription.c). */
#include "ops/op.h"

#include "topics/publish.h"

#include <stdlib.h>
#include <string.h>

/* A subscription reads each stream message as it arrives
 * (momento__subscription_decode, subscription.c), never a whole reply: this
 * decoder is never called. It exists because the table's rows and the
 * channels' registered paths are keyed by the decoders the library has. */
MOMENTO__DECODER(topic_subscribe)
{
    (void)r, (void)msgs, (void)n_msgs, (void)scratch;
    return MOMENTO_ERR_BAD_RESPONSE;
}

static int publish(momento_client *c, const char *cache, const char *topic, const void *value,
                   size_t value_len, bool text, const momento_request_options *opts,
                   momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    MOMENTO__CHECK(momento__check_topic_name(topic));
    /* A NUL in a text is valid UTF-8, but momento-local refuses strings
     * holding one (its protobuf-c strings end there), and a C text
     * normally has none: refused here, with bytes as the way to send it. */
    if (text && momento__check_utf8(value, value_len) != MOMENTO_OK)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* its reason says where */
    if (text && value_len && memchr(value, 0, value_len))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the text has a NUL byte (publish it as bytes)");
    if (!value && value_len)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the value is NULL with a length of %zu", value_len);
    if (value_len > MOMENTO__MAX_REQUEST_BYTES - strlen(topic) - strlen(cache))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the value is over one request's %d bytes",
                               MOMENTO__MAX_REQUEST_BYTES);

    momento__call_opts co;
    momento__call_opts_from(c, opts, &co);
    return momento__topic_publish_send(c, cache, topic, value, value_len, text, &co, cb, userdata);
}

int momento_topic_publish(momento_client *c, const char *cache, const char *topic,
                          const void *value, size_t value_len, const momento_request_options *opts,
                          momento_callback cb, void *userdata)
{
    return publish(c, cache, topic, value, value_len, false, opts, cb, userdata);
}

int momento_topic_publish_text(momento_client *c, const char *cache, const char *topic,
                               const char *text, size_t text_len,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    return publish(c, cache, topic, text, text_len, true, opts, cb, userdata);
}

int momento_topic_publish_sync(momento_client *c, const char *cache, const char *topic,
                               const void *value, size_t value_len,
                               const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_topic_publish(c, cache, topic, value, value_len, opts, MOMENTO__SYNC_CB));
}

int momento_topic_publish_text_sync(momento_client *c, const char *cache, const char *topic,
                                    const char *text, size_t text_len,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(
        momento_topic_publish_text(c, cache, topic, text, text_len, opts, MOMENTO__SYNC_CB));
}
