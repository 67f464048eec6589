/* Webhooks (include/momento/webhooks.h, docs/api.md "Webhooks"): the five
 * requests of the webhook service, on the control endpoint, their decoders
 * and `_sync` forms, the result's accessors, and the check of a delivery's
 * signature (HMAC-SHA3-256, OpenSSL) that a receiving application makes.
 * A secret is never logged, and no refusal's reason holds one. */
#include "momento/webhooks.h"

#include "ops/op.h"

#include "base/alloc.h"

#include "webhook.pb-c.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdlib.h>
#include <string.h>

/* A webhook's name as the SDKs check it (not empty), and as a protobuf
 * string must be (UTF-8). Its length (Momento's protos: 128 characters)
 * is the server's to check. */
static int check_name(const char *name)
{
    if (!name)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the webhook name is NULL");
    if (!*name)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "webhook name must not be empty");
    return momento__check_utf8(name, strlen(name));
}

static int check_url(const char *url)
{
    if (!url)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the webhook URL is NULL");
    if (!*url)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the webhook URL is empty");
    return momento__check_utf8(url, strlen(url));
}

/* Checks a request about webhook `name` of `cache` and fills `id` with
 * them (borrowed: packed at submit). Returns 0 or the refusal. */
static int webhook_id(momento_client *c, const char *cache, const char *name,
                      const momento_request_options *opts, momento_callback cb,
                      Webhook__WebhookId *id)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    MOMENTO__CHECK(check_name(name));
    webhook____webhook_id__init(id);
    id->cache_name = (char *)cache;
    id->webhook_name = (char *)name;
    return MOMENTO_OK;
}

int momento_webhook_put(momento_client *c, const char *cache, const char *name, const char *topic,
                        const char *url, const momento_request_options *opts, momento_callback cb,
                        void *userdata)
{
    Webhook__WebhookId id;
    MOMENTO__CHECK(webhook_id(c, cache, name, opts, cb, &id));
    MOMENTO__CHECK(momento__check_topic_name(topic));
    MOMENTO__CHECK(check_url(url));
    Webhook__WebhookDestination dest = WEBHOOK____WEBHOOK_DESTINATION__INIT;
    dest.kind_case = WEBHOOK____WEBHOOK_DESTINATION__KIND_POST_URL;
    dest.post_url = (char *)url;
    Webhook__Webhook wh = WEBHOOK____WEBHOOK__INIT;
    wh.webhook_id = &id;
    wh.topic_name = (char *)topic;
    wh.destination = &dest;
    Webhook__PutWebhookRequest req = WEBHOOK____PUT_WEBHOOK_REQUEST__INIT;
    req.webhook = &wh;
    return momento__call_start(c, MOMENTO__RPC_PUT_WEBHOOK, momento__decode_put_webhook, NULL,
                               &req.base, opts, cb, userdata);
}

int momento_webhook_put_sync(momento_client *c, const char *cache, const char *name,
                             const char *topic, const char *url,
                             const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_webhook_put(c, cache, name, topic, url, opts, MOMENTO__SYNC_CB));
}

int momento_webhook_delete(momento_client *c, const char *cache, const char *name,
                           const momento_request_options *opts, momento_callback cb,
                           void *userdata)
{
    Webhook__WebhookId id;
    MOMENTO__CHECK(webhook_id(c, cache, name, opts, cb, &id));
    Webhook__DeleteWebhookRequest req = WEBHOOK____DELETE_WEBHOOK_REQUEST__INIT;
    req.webhook_id = &id;
    return momento__call_start(c, MOMENTO__RPC_DELETE_WEBHOOK, momento__decode_delete_webhook,
                               NULL, &req.base, opts, cb, userdata);
}

int momento_webhook_delete_sync(momento_client *c, const char *cache, const char *name,
                                const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_webhook_delete(c, cache, name, opts, MOMENTO__SYNC_CB));
}

int momento_webhook_list(momento_client *c, const char *cache,
                         const momento_request_options *opts, momento_callback cb, void *userdata)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    Webhook__ListWebhookRequest req = WEBHOOK____LIST_WEBHOOK_REQUEST__INIT;
    req.cache_name = (char *)cache;
    return momento__call_start(c, MOMENTO__RPC_LIST_WEBHOOKS, momento__decode_list_webhooks, NULL,
                               &req.base, opts, cb, userdata);
}

int momento_webhook_list_sync(momento_client *c, const char *cache,
                              const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_webhook_list(c, cache, opts, MOMENTO__SYNC_CB));
}

int momento_webhook_get_secret(momento_client *c, const char *cache, const char *name,
                               const momento_request_options *opts, momento_callback cb,
                               void *userdata)
{
    MOMENTO__CHECK(momento__check_cache_request(c, cache, opts, cb));
    MOMENTO__CHECK(check_name(name));
    Webhook__GetWebhookSecretRequest req = WEBHOOK____GET_WEBHOOK_SECRET_REQUEST__INIT;
    req.cache_name = (char *)cache;
    req.webhook_name = (char *)name;
    return momento__call_start(c, MOMENTO__RPC_GET_WEBHOOK_SECRET,
                               momento__decode_get_webhook_secret, NULL, &req.base, opts, cb,
                               userdata);
}

int momento_webhook_get_secret_sync(momento_client *c, const char *cache, const char *name,
                                    const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_webhook_get_secret(c, cache, name, opts, MOMENTO__SYNC_CB));
}

int momento_webhook_rotate_secret(momento_client *c, const char *cache, const char *name,
                                  const momento_request_options *opts, momento_callback cb,
                                  void *userdata)
{
    Webhook__WebhookId id;
    MOMENTO__CHECK(webhook_id(c, cache, name, opts, cb, &id));
    Webhook__RotateWebhookSecretRequest req = WEBHOOK____ROTATE_WEBHOOK_SECRET_REQUEST__INIT;
    req.webhook_id = &id;
    return momento__call_start(c, MOMENTO__RPC_ROTATE_WEBHOOK_SECRET,
                               momento__decode_rotate_webhook_secret, NULL, &req.base, opts, cb,
                               userdata);
}

int momento_webhook_rotate_secret_sync(momento_client *c, const char *cache, const char *name,
                                       const momento_request_options *opts, momento_result **ret)
{
    MOMENTO__SYNC(momento_webhook_rotate_secret(c, cache, name, opts, MOMENTO__SYNC_CB));
}

/* A reply that should carry a secret and carries none could not be used
 * to check a single delivery: not what was asked for. */
static int secret_result(momento_result *r, const char *secret)
{
    if (!secret || !*secret)
        return MOMENTO_ERR_BAD_RESPONSE;
    r->webhook_secret = secret;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(put_webhook)
{
    MOMENTO__UNPACK_ONE(Webhook__PutWebhookResponse, PUT_WEBHOOK);
    return secret_result(r, m->secret_string);
}

MOMENTO__EMPTY_DECODER(delete_webhook, MOMENTO_OUTCOME_SUCCESS)

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

MOMENTO__DECODER(list_webhooks)
{
    MOMENTO__UNPACK_ONE(Webhook__ListWebhooksResponse, LIST_WEBHOOKS);
    /* Pointing into the message; the scratch frees the array after the
     * callback, and momento_result_dup() copies what it keeps. */
    momento_webhook *whs = NULL;
    if (m->n_webhook) {
        whs = momento__malloc(m->n_webhook * sizeof(*whs));
        if (!whs)
            return MOMENTO_ERR_NO_MEMORY;
        scratch->mem = whs;
    }
    for (size_t i = 0; i < m->n_webhook; i++) {
        const Webhook__Webhook *w = m->webhook[i];
        const Webhook__WebhookId *id = w ? w->webhook_id : NULL;
        const Webhook__WebhookDestination *d = w ? w->destination : NULL;
        whs[i] = (momento_webhook){
            .cache = or_empty(id ? id->cache_name : NULL),
            .name = or_empty(id ? id->webhook_name : NULL),
            .topic = or_empty(w ? w->topic_name : NULL),
            .url = or_empty(d && d->kind_case == WEBHOOK____WEBHOOK_DESTINATION__KIND_POST_URL
                                ? d->post_url
                                : NULL),
        };
    }
    r->webhooks = whs;
    r->n_webhooks = m->n_webhook;
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(get_webhook_secret)
{
    MOMENTO__UNPACK_ONE(Webhook__GetWebhookSecretResponse, GET_WEBHOOK_SECRET);
    int rc = secret_result(r, m->secret_string);
    if (rc != MOMENTO_OK)
        return rc;
    momento_webhook *wh = momento__malloc(sizeof(*wh));
    if (!wh)
        return MOMENTO_ERR_NO_MEMORY;
    scratch->mem = wh;
    *wh = (momento_webhook){.cache = or_empty(m->cache_name),
                            .name = or_empty(m->webhook_name),
                            .topic = "",
                            .url = ""};
    r->webhooks = wh;
    r->n_webhooks = 1;
    return MOMENTO_OK;
}

MOMENTO__DECODER(rotate_webhook_secret)
{
    MOMENTO__UNPACK_ONE(Webhook__RotateWebhookSecretResponse, ROTATE_WEBHOOK_SECRET);
    return secret_result(r, m->secret_string);
}

const char *momento_result_webhook_secret(const momento_result *r)
{
    return r && r->outcome == MOMENTO_OUTCOME_SUCCESS && r->webhook_secret ? r->webhook_secret
                                                                          : "";
}

size_t momento_result_webhook_count(const momento_result *r)
{
    return r && r->outcome == MOMENTO_OUTCOME_SUCCESS ? r->n_webhooks : 0;
}

const momento_webhook *momento_result_webhook(const momento_result *r, size_t i)
{
    if (!r || r->outcome != MOMENTO_OUTCOME_SUCCESS || i >= r->n_webhooks)
        return NULL;
    return &r->webhooks[i];
}

/* ---- signatures -------------------------------------------------------- */

#define SIG_BYTES 32 /* SHA3-256 */

/* HMAC-SHA3-256 of the body keyed with the secret's bytes, as Momento's
 * docs and the Node.js SDK's WebhookUtils compute it. */
static int mac(const void *body, size_t body_len, const char *secret,
               unsigned char out[SIG_BYTES])
{
    unsigned int len = 0;
    /* HMAC() with a NULL body and length 0 is the MAC of nothing; give it
     * a valid pointer all the same. */
    if (!HMAC(EVP_sha3_256(), secret, (int)strlen(secret),
              body_len ? (const unsigned char *)body : (const unsigned char *)"", body_len, out,
              &len) ||
        len != SIG_BYTES)
        return MOMENTO_ERR_NO_MEMORY;
    return MOMENTO_OK;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int momento_webhook_sign(const void *body, size_t body_len, const char *secret, char *out)
{
    if (!out || !secret || (!body && body_len))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    unsigned char m[SIG_BYTES];
    int rc = mac(body, body_len, secret, m);
    if (rc != MOMENTO_OK)
        return rc;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < SIG_BYTES; i++) {
        out[2 * i] = digits[m[i] >> 4];
        out[2 * i + 1] = digits[m[i] & 15];
    }
    out[2 * SIG_BYTES] = '\0';
    OPENSSL_cleanse(m, sizeof(m));
    return MOMENTO_OK;
}

int momento_webhook_signature_valid(const void *body, size_t body_len, const char *signature_hex,
                                    const char *secret)
{
    if (!signature_hex || !secret || (!body && body_len))
        return MOMENTO_ERR_INVALID_ARGUMENT;
    unsigned char given[SIG_BYTES];
    if (strlen(signature_hex) != 2 * SIG_BYTES)
        return 0;
    for (size_t i = 0; i < SIG_BYTES; i++) {
        int hi = hex_value(signature_hex[2 * i]), lo = hex_value(signature_hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        given[i] = (unsigned char)(hi << 4 | lo);
    }
    unsigned char want[SIG_BYTES];
    int rc = mac(body, body_len, secret, want);
    if (rc != MOMENTO_OK)
        return rc;
    /* In constant time: a comparison that stops at the first difference
     * tells a forger how much of a guess was right. */
    int same = CRYPTO_memcmp(given, want, SIG_BYTES) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    return same;
}
