/* Disposable tokens and API keys: their form, their signature and the
 * scope they hold a call to. A disposable token is
 *
 *     "mlt1." base64url(claims) "." base64url(HMAC-SHA256(key, the part before the 2nd dot))
 *
 * with claims = valid_until (8 bytes, big-endian, seconds since the epoch)
 * followed by the packed permission_messages.Permissions it was issued
 * with. An API key is the same with "mlk1." and, between the expiry and
 * the permissions, its id (8 bytes) and its lifetime in seconds (4 bytes;
 * 0 and an expiry of UINT64_MAX for a key that never expires). Its refresh
 * token is "mlr1." base64url(HMAC-SHA256(key, "refresh:" the key)): one
 * per key, nothing to store. What does need storing is which keys a
 * refresh retired: their ids (srv_server.h's api_keys). OpenSSL computes
 * the MAC; the key is random per server (see srv_tokens.h). The forms are
 * this server's own: Momento's clients never look inside a token, they
 * only wrap it (as base64 of {"endpoint", "api_key"}) and send it back. */
#include "core/srv_tokens.h"

#include "core/srv_perms.h"
#include "core/srv_server.h"

#include "permissionmessages.pb-c.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PREFIX "mlt1."
#define KEY_PREFIX "mlk1."
#define REFRESH_PREFIX "mlr1."
#define PREFIX_LEN 5 /* each of the three */
/* Claims before the permissions: a disposable token's expiry; an API
 * key's expiry, id and lifetime. */
#define TOKEN_HEAD 8
#define KEY_HEAD 20
#define MAC_LEN 32
/* A token's claims beyond this are not ours (requests are at most a few
 * MB, but a scope worth signing is small). */
#define MAX_CLAIMS 65536

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64_len(size_t n)
{
    return (n * 4 + 2) / 3;
}

/* Unpadded base64url of `n` bytes at `out`; returns the end. */
static char *b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        for (int k = 18; k >= 0; k -= 6)
            *out++ = b64url[(v >> k) & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *out++ = b64url[v >> 18];
        *out++ = b64url[(v >> 12) & 63];
        if (i + 1 < n)
            *out++ = b64url[(v >> 6) & 63];
    }
    return out;
}

static int b64_value(char ch)
{
    const char *p = ch ? strchr(b64url, ch) : NULL;
    return p ? (int)(p - b64url) : -1;
}

/* Decodes unpadded base64url into `out` (room for n * 3 / 4 bytes); returns
 * the length, or -1 when `in` is not canonical base64url: one token has
 * exactly one spelling, so an altered one cannot pass as the same. */
static long b64_decode(const char *in, size_t n, uint8_t *out)
{
    if (n % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64_value(in[i]);
        if (d < 0)
            return -1;
        v = v << 6 | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(v >> bits);
        }
    }
    if (bits && (v & ((1u << bits) - 1)))
        return -1; /* leftover bits must be zero */
    return (long)o;
}

static void ensure_key(momento_local *s)
{
    if (s->token_key_set)
        return;
    /* RAND_bytes fails only without an entropy source; a server that cannot
     * draw a key must not sign with a predictable one, so the key then
     * stays unset and nothing verifies (mac() refuses). */
    if (RAND_bytes(s->token_key, sizeof(s->token_key)) == 1)
        s->token_key_set = true;
}

static bool mac(momento_local *s, const char *data, size_t len, uint8_t out[MAC_LEN])
{
    ensure_key(s);
    if (!s->token_key_set)
        return false;
    unsigned int out_len = 0;
    return HMAC(EVP_sha256(), s->token_key, sizeof(s->token_key), (const unsigned char *)data, len,
                out, &out_len) != NULL &&
           out_len == MAC_LEN;
}

bool srv_token_is_disposable(const char *token, size_t len)
{
    return len > PREFIX_LEN && memcmp(token, PREFIX, PREFIX_LEN) == 0;
}

static bool is_api_key(const char *token, size_t len)
{
    return len > PREFIX_LEN && memcmp(token, KEY_PREFIX, PREFIX_LEN) == 0;
}

bool srv_token_is_issued(const char *token, size_t len)
{
    return srv_token_is_disposable(token, len) || is_api_key(token, len);
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* `prefix` base64url(head, perms) "." base64url(mac), malloc'd. */
static char *sign(momento_local *s, const char *prefix, const uint8_t *head, size_t head_len,
                  const uint8_t *perms, size_t perms_len)
{
    size_t claims_len = head_len + perms_len;
    uint8_t *claims = malloc(claims_len);
    char *out = malloc(PREFIX_LEN + b64_len(claims_len) + 1 + b64_len(MAC_LEN) + 1);
    if (!claims || !out) {
        free(claims);
        free(out);
        return NULL;
    }
    memcpy(claims, head, head_len);
    if (perms_len)
        memcpy(claims + head_len, perms, perms_len);
    memcpy(out, prefix, PREFIX_LEN);
    char *p = b64_encode(claims, claims_len, out + PREFIX_LEN);
    free(claims);
    uint8_t m[MAC_LEN];
    if (!mac(s, out, (size_t)(p - out), m)) {
        free(out);
        return NULL;
    }
    *p++ = '.';
    p = b64_encode(m, MAC_LEN, p);
    *p = '\0';
    return out;
}

char *srv_token_sign(momento_local *s, const uint8_t *perms, size_t perms_len, uint64_t valid_until)
{
    uint8_t head[TOKEN_HEAD];
    put_be(head, valid_until, 8);
    return sign(s, PREFIX, head, sizeof(head), perms, perms_len);
}

/* A verified token's scope. */
typedef struct claims {
    uint64_t valid_until; /* UINT64_MAX: an API key that never expires */
    PermissionMessages__Permissions *perms;
    bool api_key;
    uint64_t id;       /* an API key's */
    uint32_t lifetime; /* an API key's; 0: never expires */
} claims;

static bool revoked_locked(momento_local *s, uint64_t id)
{
    for (size_t i = 0; i < s->api_keys.n_revoked; i++)
        if (s->api_keys.revoked[i].id == id)
            return true;
    return false;
}

/* Whether API key `id` has been refreshed away. */
static bool revoked(momento_local *s, uint64_t id)
{
    pthread_mutex_lock(&s->api_keys.mu);
    bool r = revoked_locked(s, id);
    pthread_mutex_unlock(&s->api_keys.mu);
    return r;
}

/* Checks `token`'s form, signature and expiry; fills `out` (its perms to
 * be freed) when all hold. NULL when valid, else why not. */
static const char *verify(momento_local *s, const char *token, size_t len, claims *out)
{
    const char *dot = len > PREFIX_LEN ? memchr(token + PREFIX_LEN, '.', len - PREFIX_LEN) : NULL;
    if (!dot)
        return "invalid auth token";
    size_t signed_len = (size_t)(dot - token);
    size_t claims_b64 = signed_len - PREFIX_LEN;
    size_t mac_b64 = len - signed_len - 1;
    if (claims_b64 > b64_len(MAX_CLAIMS) || mac_b64 != b64_len(MAC_LEN))
        return "invalid auth token";
    uint8_t got[MAC_LEN + 2], want[MAC_LEN];
    if (b64_decode(dot + 1, mac_b64, got) != MAC_LEN || !mac(s, token, signed_len, want) ||
        CRYPTO_memcmp(got, want, MAC_LEN) != 0)
        return "invalid auth token";
    uint8_t *raw = malloc(claims_b64 * 3 / 4 + 3);
    if (!raw)
        return "server out of memory";
    long n = b64_decode(token + PREFIX_LEN, claims_b64, raw);
    bool key = is_api_key(token, len);
    size_t head = key ? KEY_HEAD : TOKEN_HEAD;
    if (n < (long)head) {
        free(raw);
        return "invalid auth token";
    }
    uint64_t until = get_be(raw, 8);
    /* Expired: AUTHENTICATION, as Momento answers an expired token. */
    if ((uint64_t)time(NULL) >= until) {
        free(raw);
        return "auth token has expired";
    }
    out->valid_until = until;
    out->api_key = key;
    out->id = key ? get_be(raw + 8, 8) : 0;
    out->lifetime = key ? (uint32_t)get_be(raw + 16, 4) : 0;
    /* Refreshed away: as a key that never was. */
    if (key && revoked(s, out->id)) {
        free(raw);
        return "invalid auth token";
    }
    out->perms = permission_messages__permissions__unpack(NULL, (size_t)n - head, raw + head);
    free(raw);
    return out->perms ? NULL : "invalid auth token";
}

int srv_token_authenticate(momento_local *s, const grpc_slice *auth, srv_reply *r,
                           uint64_t *ret_valid_until)
{
    if (!auth)
        return 0;
    const char *token = (const char *)GRPC_SLICE_START_PTR(*auth);
    size_t len = GRPC_SLICE_LENGTH(*auth);
    if (!srv_token_is_issued(token, len))
        return 0;
    claims c;
    const char *why = verify(s, token, len, &c);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "%s", why);
        return -1;
    }
    permission_messages__permissions__free_unpacked(c.perms, NULL);
    /* 0 for a key that never expires: no expiry to end a stream at. */
    if (ret_valid_until)
        *ret_valid_until = c.valid_until == UINT64_MAX ? 0 : c.valid_until;
    return 1;
}

/* ----------------------------------------------------------------- scope */

/* What an RPC needs of a grant is its row's `.access` (common/methods.def):
 * the table says it, beside the RPC's other properties. */

/* Whether a grant's role covers `a`. CacheRole and TopicRole number their
 * roles alike: 1 read-write, 2 read-only, 3 write-only. */
static bool role_allows(int role, momento__access a)
{
    switch (a) {
    case MOMENTO__ACCESS_READ:
        return role == 1 || role == 2;
    case MOMENTO__ACCESS_WRITE:
        return role == 1 || role == 3;
    case MOMENTO__ACCESS_READ_WRITE:
        return role == 1;
    default:
        return false;
    }
}

static bool same(const void *a, size_t alen, const void *b, size_t blen)
{
    return alen == blen && memcmp(a, b, alen) == 0;
}

static bool prefixed(const void *s, size_t len, const void *prefix, size_t plen)
{
    return plen <= len && memcmp(s, prefix, plen) == 0;
}

/* Whether a grant on every cache (`all`) or on the one `sel` names covers
 * `cache`. */
static bool cache_matches(bool all, const CacheSel *sel, const char *cache, size_t cache_len)
{
    if (all)
        return true;
    return sel && sel->kind_case == PT(CACHE_SELECTOR__KIND_CACHE_NAME) && sel->cache_name &&
           same(sel->cache_name, strlen(sel->cache_name), cache, cache_len);
}

/* Whether some cache grant allows `a` on `key` of `cache`. A NULL key asks
 * for a grant on every item (an RPC whose items cannot all be named). */
static bool cache_allows(const PermissionMessages__ExplicitPermissions *ex, momento__access a,
                         const char *cache, size_t cache_len, const uint8_t *key, size_t key_len)
{
    for (size_t i = 0; i < ex->n_permissions; i++) {
        const PermissionMessages__PermissionsType *t = ex->permissions[i];
        if (t->kind_case != PT(KIND_CACHE_PERMISSIONS))
            continue;
        const CachePerm *p = t->cache_permissions;
        if (!role_allows(p->role, a) ||
            !cache_matches(p->cache_case == PT(CACHE_PERMISSIONS__CACHE_ALL_CACHES),
                           p->cache_case == PT(CACHE_PERMISSIONS__CACHE_CACHE_SELECTOR)
                               ? p->cache_selector
                               : NULL,
                           cache, cache_len))
            continue;
        /* No item selector is every item: the SDKs send a cache-wide grant
         * without one. */
        if (p->cache_item_case == PT(CACHE_PERMISSIONS__CACHE_ITEM_ALL_ITEMS) ||
            p->cache_item_case == PT(CACHE_PERMISSIONS__CACHE_ITEM__NOT_SET))
            return true;
        if (!key || p->cache_item_case != PT(CACHE_PERMISSIONS__CACHE_ITEM_ITEM_SELECTOR))
            continue;
        const ItemSel *sel = p->item_selector;
        if (sel->kind_case == PT(CACHE_ITEM_SELECTOR__KIND_KEY) &&
            same(sel->key.data, sel->key.len, key, key_len))
            return true;
        if (sel->kind_case == PT(CACHE_ITEM_SELECTOR__KIND_KEY_PREFIX) &&
            prefixed(key, key_len, sel->key_prefix.data, sel->key_prefix.len))
            return true;
    }
    return false;
}

static bool topic_allows(const PermissionMessages__ExplicitPermissions *ex, momento__access a,
                         const char *cache, size_t cache_len, const char *topic, size_t topic_len)
{
    for (size_t i = 0; i < ex->n_permissions; i++) {
        const PermissionMessages__PermissionsType *t = ex->permissions[i];
        if (t->kind_case != PT(KIND_TOPIC_PERMISSIONS))
            continue;
        const TopicPerm *p = t->topic_permissions;
        if (!role_allows(p->role, a) ||
            !cache_matches(p->cache_case == PT(TOPIC_PERMISSIONS__CACHE_ALL_CACHES),
                           p->cache_case == PT(TOPIC_PERMISSIONS__CACHE_CACHE_SELECTOR)
                               ? p->cache_selector
                               : NULL,
                           cache, cache_len))
            continue;
        if (p->topic_case == PT(TOPIC_PERMISSIONS__TOPIC_ALL_TOPICS))
            return true;
        if (p->topic_case != PT(TOPIC_PERMISSIONS__TOPIC_TOPIC_SELECTOR))
            continue;
        const TopicSel *sel = p->topic_selector;
        if (sel->kind_case == PT(TOPIC_SELECTOR__KIND_TOPIC_NAME) && sel->topic_name &&
            same(sel->topic_name, strlen(sel->topic_name), topic, topic_len))
            return true;
        if (sel->kind_case == PT(TOPIC_SELECTOR__KIND_TOPIC_NAME_PREFIX) &&
            sel->topic_name_prefix &&
            prefixed(topic, topic_len, sel->topic_name_prefix, strlen(sel->topic_name_prefix)))
            return true;
    }
    return false;
}

/* ------------------------------------------------------ the request's keys */

/* The protobuf wire format, just enough to find length-delimited fields
 * without unpacking: reads a varint, false when malformed. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Calls `each` for every length-delimited field number `field` of the
 * message in [p, end); returns false when the bytes are malformed or `each`
 * returns false. */
typedef bool each_fn(const uint8_t *v, size_t len, void *ctx);

static bool each_field(const uint8_t *p, const uint8_t *end, uint32_t field, each_fn *each,
                       void *ctx)
{
    while (p < end) {
        uint64_t tag, n;
        if (!varint(&p, end, &tag))
            return false;
        switch (tag & 7) {
        case 0:
            if (!varint(&p, end, &n))
                return false;
            break;
        case 1:
            if (end - p < 8)
                return false;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return false;
            p += 4;
            break;
        case 2:
            if (!varint(&p, end, &n) || n > (uint64_t)(end - p))
                return false;
            if ((tag >> 3) == field && !each(p, (size_t)n, ctx))
                return false;
            p += n;
            break;
        default:
            return false;
        }
    }
    return true;
}

typedef struct key_check {
    const PermissionMessages__ExplicitPermissions *ex;
    momento__access a;
    const char *cache;
    size_t cache_len;
    bool denied;
} key_check;

static bool check_key(const uint8_t *v, size_t len, void *ctx)
{
    key_check *k = ctx;
    if (!cache_allows(k->ex, k->a, k->cache, k->cache_len, v, len))
        k->denied = true;
    return true;
}

/* A batch item (_GetRequest / _SetRequest): its key is its field 1. */
static bool check_item(const uint8_t *v, size_t len, void *ctx)
{
    return each_field(v, v + len, 1, check_key, ctx);
}

typedef struct string_field {
    const uint8_t *v;
    size_t len;
} string_field;

static bool take_last(const uint8_t *v, size_t len, void *ctx)
{
    string_field *f = ctx;
    f->v = v;
    f->len = len;
    return true;
}

bool srv_token_request_key_is(momento__rpc_id m, grpc_slice body, const char *key)
{
    /* The caller's key: _GenerateDisposableTokenRequest.auth_token is
     * field 2, _GenerateApiTokenRequest.auth_token field 3, and
     * _RefreshApiTokenRequest.api_key field 1. Protobuf's last occurrence
     * wins, as protobuf-c's decoding (rpc_token.c) takes, and an absent
     * one is "". */
    uint32_t field = m == MOMENTO__RPC_GENERATE_DISPOSABLE_TOKEN ? 2
                     : m == MOMENTO__RPC_GENERATE_API_TOKEN      ? 3
                     : m == MOMENTO__RPC_REFRESH_API_TOKEN       ? 1
                                                                 : 0;
    if (!field)
        return false;
    const uint8_t *p = GRPC_SLICE_START_PTR(body);
    string_field f = {0};
    size_t n = strlen(key);
    return each_field(p, p + GRPC_SLICE_LENGTH(body), field, take_last, &f) && f.len == n &&
           (n == 0 || memcmp(f.v, key, n) == 0);
}

static void deny(srv_reply *r)
{
    srv_reply_error(r, GRPC_STATUS_PERMISSION_DENIED, NULL,
                    "Insufficient permissions to perform this operation");
}

bool srv_token_permits(momento_local *s, momento__rpc_id m, const grpc_slice *auth,
                       const grpc_slice *cache, grpc_slice body, srv_reply *r)
{
    /* The auth service judges the key in its request's body, whatever
     * `authorization` holds (rpc_api_key.c): the SDKs send none. */
    if (!auth || momento__rpcs[m].plane == MOMENTO__PLANE_PING ||
        momento__rpcs[m].plane == MOMENTO__PLANE_AUTH)
        return true;
    const char *token = (const char *)GRPC_SLICE_START_PTR(*auth);
    size_t token_len = GRPC_SLICE_LENGTH(*auth);
    if (!srv_token_is_issued(token, token_len))
        return true;
    claims c;
    const char *why = verify(s, token, token_len, &c);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "%s", why);
        return false;
    }
    /* A super user's key may make every call. */
    if (c.perms->kind_case == PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER) {
        permission_messages__permissions__free_unpacked(c.perms, NULL);
        return true;
    }
    const PermissionMessages__ExplicitPermissions *ex =
        c.perms->kind_case == PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT ? c.perms->explicit_
                                                                              : NULL;
    momento__access a = momento__rpcs[m].access;
    const uint8_t *p = GRPC_SLICE_START_PTR(body), *end = p + GRPC_SLICE_LENGTH(body);
    bool ok = false, decodes = true;
    if (!ex || a == MOMENTO__ACCESS_NONE) {
        ok = false;
    } else if (momento__rpcs[m].plane == MOMENTO__PLANE_TOPIC) {
        string_field name = {0}, topic = {0};
        decodes =
            each_field(p, end, 1, take_last, &name) && each_field(p, end, 2, take_last, &topic);
        ok = decodes &&
             topic_allows(ex, a, (const char *)name.v, name.len, (const char *)topic.v, topic.len);
    } else if (!cache || GRPC_SLICE_LENGTH(*cache) == 0) {
        /* No cache named: the dispatcher answers INVALID_ARGUMENT. */
        ok = true;
    } else {
        key_check k = {ex, a, (const char *)GRPC_SLICE_START_PTR(*cache), GRPC_SLICE_LENGTH(*cache),
                       false};
        if (m == MOMENTO__RPC_SORTED_SET_UNION_STORE ||
            strncmp(momento__rpcs[m].path, "/leaderboard.", 13) == 0) {
            /* SortedSetUnionStore reads sets named deep in its request:
             * only a grant on every item covers them all. A leaderboard is
             * no item of its cache (its name is not a key), so a cache
             * grant covers it only when it covers every item; an item or
             * prefix grant, none. */
            ok = cache_allows(ex, a, k.cache, k.cache_len, NULL, 0);
        } else {
            /* Every data request names its key (a collection's name) in
             * field 1, KeysExist all of them; the batches' items hold one
             * each. A request naming none needs a grant on every item. */
            bool batch = m == MOMENTO__RPC_GET_BATCH || m == MOMENTO__RPC_SET_BATCH;
            string_field any = {0};
            decodes = each_field(p, end, 1, take_last, &any) &&
                      each_field(p, end, 1, batch ? check_item : check_key, &k);
            ok =
                decodes && (any.v ? !k.denied : cache_allows(ex, a, k.cache, k.cache_len, NULL, 0));
        }
    }
    permission_messages__permissions__free_unpacked(c.perms, NULL);
    if (!decodes) {
        srv_reply_undecodable(r);
        return false;
    }
    if (!ok)
        deny(r);
    return ok;
}

/* --------------------------------------------------------------- API keys */

int srv_token_inspect(momento_local *s, const char *key, srv_reply *r, srv_token_info *ret)
{
    size_t len = strlen(key);
    memset(ret, 0, sizeof(*ret));
    if (!srv_token_is_issued(key, len))
        return 0;
    claims c;
    const char *why = verify(s, key, len, &c);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "%s", why);
        return -1;
    }
    ret->api_key = c.api_key;
    ret->super_user = c.perms->kind_case == PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER;
    permission_messages__permissions__free_unpacked(c.perms, NULL);
    return 1;
}

/* The refresh token of API key `key` (len bytes): malloc'd, or NULL. */
static char *refresh_token_of(momento_local *s, const char *key, size_t len)
{
    static const char label[] = "refresh:";
    char *in = malloc(sizeof(label) - 1 + len);
    char *out = malloc(PREFIX_LEN + b64_len(MAC_LEN) + 1);
    uint8_t m[MAC_LEN];
    if (!in || !out) {
        free(in);
        free(out);
        return NULL;
    }
    memcpy(in, label, sizeof(label) - 1);
    memcpy(in + sizeof(label) - 1, key, len);
    bool ok = mac(s, in, sizeof(label) - 1 + len, m);
    free(in);
    if (!ok) {
        free(out);
        return NULL;
    }
    memcpy(out, REFRESH_PREFIX, PREFIX_LEN);
    *b64_encode(m, MAC_LEN, out + PREFIX_LEN) = '\0';
    return out;
}

int srv_api_key_issue(momento_local *s, const uint8_t *perms, size_t perms_len, uint32_t lifetime,
                      srv_api_key *ret)
{
    pthread_mutex_lock(&s->api_keys.mu);
    uint64_t id = ++s->api_keys.next_id;
    pthread_mutex_unlock(&s->api_keys.mu);
    uint64_t until = lifetime ? (uint64_t)time(NULL) + lifetime : UINT64_MAX;
    uint8_t head[KEY_HEAD];
    put_be(head, until, 8);
    put_be(head + 8, id, 8);
    put_be(head + 16, lifetime, 4);
    ret->key = sign(s, KEY_PREFIX, head, sizeof(head), perms, perms_len);
    ret->refresh_token = ret->key ? refresh_token_of(s, ret->key, strlen(ret->key)) : NULL;
    if (!ret->refresh_token) {
        free(ret->key);
        ret->key = NULL;
        return -1;
    }
    ret->valid_until = lifetime ? until : 0;
    return 0;
}

void srv_api_key_clear(srv_api_key *k)
{
    /* Secrets: wiped before their memory goes back. */
    if (k->key) {
        memset(k->key, 0, strlen(k->key));
        free(k->key);
    }
    if (k->refresh_token) {
        memset(k->refresh_token, 0, strlen(k->refresh_token));
        free(k->refresh_token);
    }
    k->key = k->refresh_token = NULL;
}

/* Records that key `id` (valid until `until`) was refreshed away; false
 * when it already was (another refresh won) or there is no memory. Keys
 * past their expiry are forgotten on the way: they fail anyway. */
static bool revoke(momento_local *s, uint64_t id, uint64_t until, bool *ret_raced)
{
    struct srv_api_keys *k = &s->api_keys;
    uint64_t now = (uint64_t)time(NULL);
    bool ok = false;
    pthread_mutex_lock(&k->mu);
    *ret_raced = revoked_locked(s, id);
    if (!*ret_raced) {
        size_t kept = 0;
        for (size_t i = 0; i < k->n_revoked; i++)
            if (k->revoked[i].valid_until > now)
                k->revoked[kept++] = k->revoked[i];
        k->n_revoked = kept;
        if (k->n_revoked == k->cap) {
            size_t cap = k->cap ? k->cap * 2 : 16;
            struct srv_revoked *grown = realloc(k->revoked, cap * sizeof(*grown));
            if (grown) {
                k->revoked = grown;
                k->cap = cap;
            }
        }
        if (k->n_revoked < k->cap) {
            k->revoked[k->n_revoked++] = (struct srv_revoked){id, until};
            ok = true;
        }
    }
    pthread_mutex_unlock(&k->mu);
    return ok;
}

int srv_api_key_refresh(momento_local *s, const char *key, const char *refresh_token,
                        srv_reply *r, srv_api_key *ret)
{
    size_t len = strlen(key);
    if (!is_api_key(key, len)) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL,
                        "invalid api key: only an API key this server issued can be refreshed");
        return -1;
    }
    claims c;
    const char *why = verify(s, key, len, &c);
    if (why) {
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "%s", why);
        return -1;
    }
    char *want = refresh_token_of(s, key, len);
    size_t n = strlen(refresh_token);
    bool match = want && n == strlen(want) && CRYPTO_memcmp(want, refresh_token, n) == 0;
    if (!want) {
        permission_messages__permissions__free_unpacked(c.perms, NULL);
        srv_reply_no_memory(r);
        return -1;
    }
    free(want);
    if (!match) {
        permission_messages__permissions__free_unpacked(c.perms, NULL);
        srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid refresh token");
        return -1;
    }
    /* The new key first, so that a failure leaves the old one working. */
    size_t pn = permission_messages__permissions__get_packed_size(c.perms);
    uint8_t *packed = malloc(pn ? pn : 1);
    int rc = packed ? 0 : -1;
    if (packed) {
        permission_messages__permissions__pack(c.perms, packed);
        rc = srv_api_key_issue(s, packed, pn, c.lifetime, ret);
        free(packed);
    }
    permission_messages__permissions__free_unpacked(c.perms, NULL);
    if (rc < 0) {
        srv_reply_no_memory(r);
        return -1;
    }
    bool raced;
    if (!revoke(s, c.id, c.valid_until, &raced)) {
        srv_api_key_clear(ret);
        if (raced)
            srv_reply_error(r, GRPC_STATUS_UNAUTHENTICATED, NULL, "invalid auth token");
        else
            srv_reply_no_memory(r);
        return -1;
    }
    return 0;
}
