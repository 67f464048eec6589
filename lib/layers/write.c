/* The one path of a scalar write (write.h): compression, checks, the
 * effective TTL and the write notice, in that order. Compression comes
 * first because Momento's limits apply to what is sent; the notice comes
 * last, once the write is known to be well formed. */
#include "layers/write.h"

#include "codec/compress.h"
#include "model/config.h"
#include "model/validate.h"

#include <string.h>

int momento__write_begin(momento__write *w, momento_client *c, const momento__write_observer *self,
                         const char *cache, const void *key, size_t key_len, const void *value,
                         size_t value_len, uint64_t ttl_ms, const momento_request_options *opts,
                         momento_callback cb)
{
    memset(w, 0, sizeof(*w));
    w->value = value;
    w->value_len = value_len;
    MOMENTO__CHECK(momento__compress_write(c ? &c->cfg : NULL, opts, &w->value, &w->value_len, &w->owned));
    int rc = momento__check_item_request(c, cache, key, key_len, w->value, w->value_len, ttl_ms,
                                         opts, cb);
    if (rc != MOMENTO_OK) {
        momento__write_end(w);
        return rc;
    }
    w->ttl_ms = momento__effective_ttl(&c->cfg, ttl_ms);
    momento__client_note_write(c, self, cache, key, key_len);
    return MOMENTO_OK;
}

void momento__write_end(momento__write *w)
{
    free(w->owned);
    w->owned = NULL;
}

int momento__writes_begin(momento__writes *w, momento_client *c, const char *cache,
                          const void *const *keys, const size_t *key_lens,
                          const void *const *values, const size_t *value_lens, size_t n,
                          uint64_t ttl_ms, const momento_request_options *opts,
                          momento_callback cb)
{
    memset(w, 0, sizeof(*w));
    if (!values) {
        momento__refusal_clear();
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the array of values is NULL");
    }
    MOMENTO__CHECK(momento__check_ttl(ttl_ms));
    w->values = values;
    w->value_lens = value_lens;
    MOMENTO__CHECK(momento__compress_writes(c ? &c->cfg : NULL, opts, values, value_lens, n, &w->values,
                                            &w->value_lens, &w->owned));
    int rc = momento__check_keys_request(c, cache, keys, key_lens, w->values, w->value_lens, n,
                                         opts, cb);
    if (rc != MOMENTO_OK) {
        momento__writes_end(w);
        return rc;
    }
    w->ttl_ms = momento__effective_ttl(&c->cfg, ttl_ms);
    for (size_t i = 0; i < n; i++)
        momento__client_note_write(c, NULL, cache, keys[i], key_lens[i]);
    return MOMENTO_OK;
}

void momento__writes_end(momento__writes *w)
{
    momento__compressed_free(w->owned);
    w->owned = NULL;
}
