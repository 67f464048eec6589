/* Disposable tokens (include/momento/tokens.h): the scope builder, the
 * GenerateDisposableToken request to the token service, its decoder (which
 * wraps the new token as the key form Momento's SDKs hand out), and
 * credentials for a local server from such a key. A token is a secret:
 * nothing here logs, and no error message holds any part of one. */
#include "momento/tokens.h"

#include "ops/op.h"
#include "ops/token_shared.h"

#include "base/alloc.h"
#include "model/credentials.h"

#include "permissionmessages.pb-c.h"
#include "token.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* protobuf-c's names for the permission messages and their oneof cases,
 * shortened: PT(CACHE_PERMISSIONS__CACHE_ALL_CACHES) is
 * PERMISSION_MESSAGES__PERMISSIONS_TYPE__CACHE_PERMISSIONS__CACHE_ALL_CACHES. */
#define PT(name) PERMISSION_MESSAGES__PERMISSIONS_TYPE__##name
typedef PermissionMessages__PermissionsType__CachePermissions CachePerm;
typedef PermissionMessages__PermissionsType__TopicPermissions TopicPerm;
typedef PermissionMessages__PermissionsType__CacheSelector CacheSel;
typedef PermissionMessages__PermissionsType__CacheItemSelector ItemSel;
typedef PermissionMessages__PermissionsType__TopicSelector TopicSel;
typedef PermissionMessages__PermissionsType__All AllSel;

/* ------------------------------------------------------------------ scope */

enum grant_kind { GRANT_CACHE, GRANT_TOPIC };
/* What part of a cache (items) or of its topics a grant covers. */
enum grant_select { SELECT_ALL, SELECT_ONE, SELECT_PREFIX };

typedef struct grant {
    enum grant_kind kind;
    momento_token_role role;
    char *cache; /* NULL: every cache */
    enum grant_select select;
    uint8_t *name; /* the key, key prefix, topic or topic prefix */
    size_t name_len;
} grant;

struct momento_token_scope {
    grant *grants;
    size_t n, cap;
    /* momento_token_scope_new_super_user(): no grants, every permission. */
    bool super_user;
};

int momento_token_scope_new(momento_token_scope **ret)
{
    if (!ret)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "ret is NULL");
    momento_token_scope *s = momento__calloc(1, sizeof(*s));
    if (!s)
        return MOMENTO_ERR_NO_MEMORY;
    *ret = s;
    return MOMENTO_OK;
}

int momento_token_scope_new_super_user(momento_token_scope **ret)
{
    int rc = momento_token_scope_new(ret);
    if (rc == MOMENTO_OK)
        (*ret)->super_user = true;
    return rc;
}

void momento_token_scope_free(momento_token_scope *scope)
{
    if (!scope)
        return;
    for (size_t i = 0; i < scope->n; i++) {
        free(scope->grants[i].cache);
        free(scope->grants[i].name);
    }
    free(scope->grants);
    free(scope);
}

static bool role_ok(momento_token_role role)
{
    return role == MOMENTO_TOKEN_READ_WRITE || role == MOMENTO_TOKEN_READ_ONLY ||
           role == MOMENTO_TOKEN_WRITE_ONLY;
}

/* Copies one grant in. Every argument is checked before anything is
 * allocated, so a refused grant leaves the scope unchanged. `name` is
 * copied with a NUL after it: topic names are protobuf strings. */
static int add_grant(momento_token_scope *s, enum grant_kind kind, momento_token_role role,
                     const char *cache, enum grant_select select, const void *name, size_t name_len)
{
    if (!s)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the scope is NULL");
    if (s->super_user)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "a super-user scope already grants everything: it takes no grants");
    if (!role_ok(role))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "role %d is not a momento_token_role (READ_WRITE, READ_ONLY or "
                               "WRITE_ONLY)",
                               (int)role);
    if (cache && momento__check_cache_name(cache) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */
    if (select != SELECT_ALL && (!name || name_len == 0))
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the %s is NULL or empty",
                               select == SELECT_PREFIX ? "prefix" : "name");
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4;
        grant *g = momento__realloc(s->grants, cap * sizeof(*g));
        if (!g)
            return MOMENTO_ERR_NO_MEMORY;
        s->grants = g;
        s->cap = cap;
    }
    grant g = {.kind = kind, .role = role, .select = select, .name_len = name_len};
    if (cache && !(g.cache = momento__malloc(strlen(cache) + 1)))
        return MOMENTO_ERR_NO_MEMORY;
    if (cache)
        memcpy(g.cache, cache, strlen(cache) + 1);
    if (select != SELECT_ALL) {
        g.name = momento__malloc(name_len + 1);
        if (!g.name) {
            free(g.cache);
            return MOMENTO_ERR_NO_MEMORY;
        }
        memcpy(g.name, name, name_len);
        g.name[name_len] = '\0';
    }
    s->grants[s->n++] = g;
    return MOMENTO_OK;
}

int momento_token_scope_add_cache(momento_token_scope *scope, momento_token_role role,
                                  const char *cache)
{
    return add_grant(scope, GRANT_CACHE, role, cache, SELECT_ALL, NULL, 0);
}

int momento_token_scope_add_cache_key(momento_token_scope *scope, momento_token_role role,
                                      const char *cache, const void *key, size_t key_len)
{
    if (key && momento__check_key(key, key_len) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */
    return add_grant(scope, GRANT_CACHE, role, cache, SELECT_ONE, key, key_len);
}

int momento_token_scope_add_cache_key_prefix(momento_token_scope *scope, momento_token_role role,
                                             const char *cache, const void *prefix,
                                             size_t prefix_len)
{
    if (prefix && momento__check_key(prefix, prefix_len) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */
    return add_grant(scope, GRANT_CACHE, role, cache, SELECT_PREFIX, prefix, prefix_len);
}

int momento_token_scope_add_topic(momento_token_scope *scope, momento_token_role role,
                                  const char *cache, const char *topic)
{
    if (topic && momento__check_topic_name(topic) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */
    return add_grant(scope, GRANT_TOPIC, role, cache, topic ? SELECT_ONE : SELECT_ALL, topic,
                     topic ? strlen(topic) : 0);
}

int momento_token_scope_add_all_data_read_write(momento_token_scope *scope)
{
    /* The SDKs' AllDataReadWrite: read-write on every cache's items and
     * topics (and functions, which this library does not grant). Both
     * grants or neither, so a failure leaves the scope as it was. */
    int rc = momento_token_scope_add_cache(scope, MOMENTO_TOKEN_READ_WRITE, NULL);
    if (rc != MOMENTO_OK)
        return rc;
    rc = momento_token_scope_add_topic(scope, MOMENTO_TOKEN_READ_WRITE, NULL, NULL);
    if (rc != MOMENTO_OK) {
        scope->n--;
        free(scope->grants[scope->n].cache);
        free(scope->grants[scope->n].name);
    }
    return rc;
}

int momento_token_scope_add_topic_prefix(momento_token_scope *scope, momento_token_role role,
                                         const char *cache, const char *prefix)
{
    if (!prefix)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the topic prefix is NULL");
    if (momento__check_topic_name(prefix) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */
    return add_grant(scope, GRANT_TOPIC, role, cache, SELECT_PREFIX, prefix, strlen(prefix));
}

/* ---------------------------------------------------------------- request */

/* The messages of one grant, borrowing the scope's strings: they live only
 * until the request is packed. */
typedef struct grant_msgs {
    PermissionMessages__PermissionsType type;
    CachePerm cache_perm;
    TopicPerm topic_perm;
    CacheSel cache_sel;
    ItemSel item_sel;
    TopicSel topic_sel;
} grant_msgs;

static AllSel all_msg = PT(ALL__INIT);

static void fill_grant(grant_msgs *m, const grant *g)
{
    permission_messages__permissions_type__init(&m->type);
    permission_messages__permissions_type__cache_selector__init(&m->cache_sel);
    if (g->cache) {
        m->cache_sel.kind_case = PT(CACHE_SELECTOR__KIND_CACHE_NAME);
        m->cache_sel.cache_name = g->cache;
    }
    if (g->kind == GRANT_CACHE) {
        CachePerm *p = &m->cache_perm;
        permission_messages__permissions_type__cache_permissions__init(p);
        /* momento_token_role has Momento's CacheRole values. */
        p->role = (PermissionMessages__CacheRole)g->role;
        if (g->cache) {
            p->cache_case = PT(CACHE_PERMISSIONS__CACHE_CACHE_SELECTOR);
            p->cache_selector = &m->cache_sel;
        } else {
            p->cache_case = PT(CACHE_PERMISSIONS__CACHE_ALL_CACHES);
            p->all_caches = &all_msg;
        }
        if (g->select == SELECT_ALL) {
            p->cache_item_case = PT(CACHE_PERMISSIONS__CACHE_ITEM_ALL_ITEMS);
            p->all_items = &all_msg;
        } else {
            permission_messages__permissions_type__cache_item_selector__init(&m->item_sel);
            ProtobufCBinaryData b = {g->name_len, g->name};
            if (g->select == SELECT_ONE) {
                m->item_sel.kind_case = PT(CACHE_ITEM_SELECTOR__KIND_KEY);
                m->item_sel.key = b;
            } else {
                m->item_sel.kind_case = PT(CACHE_ITEM_SELECTOR__KIND_KEY_PREFIX);
                m->item_sel.key_prefix = b;
            }
            p->cache_item_case = PT(CACHE_PERMISSIONS__CACHE_ITEM_ITEM_SELECTOR);
            p->item_selector = &m->item_sel;
        }
        m->type.kind_case = PT(KIND_CACHE_PERMISSIONS);
        m->type.cache_permissions = p;
        return;
    }
    TopicPerm *p = &m->topic_perm;
    permission_messages__permissions_type__topic_permissions__init(p);
    /* ... and TopicRole's: read = subscribe, write = publish. */
    p->role = (PermissionMessages__TopicRole)g->role;
    if (g->cache) {
        p->cache_case = PT(TOPIC_PERMISSIONS__CACHE_CACHE_SELECTOR);
        p->cache_selector = &m->cache_sel;
    } else {
        p->cache_case = PT(TOPIC_PERMISSIONS__CACHE_ALL_CACHES);
        p->all_caches = &all_msg;
    }
    if (g->select == SELECT_ALL) {
        p->topic_case = PT(TOPIC_PERMISSIONS__TOPIC_ALL_TOPICS);
        p->all_topics = &all_msg;
    } else {
        permission_messages__permissions_type__topic_selector__init(&m->topic_sel);
        if (g->select == SELECT_ONE) {
            m->topic_sel.kind_case = PT(TOPIC_SELECTOR__KIND_TOPIC_NAME);
            m->topic_sel.topic_name = (char *)g->name;
        } else {
            m->topic_sel.kind_case = PT(TOPIC_SELECTOR__KIND_TOPIC_NAME_PREFIX);
            m->topic_sel.topic_name_prefix = (char *)g->name;
        }
        p->topic_case = PT(TOPIC_PERMISSIONS__TOPIC_TOPIC_SELECTOR);
        p->topic_selector = &m->topic_sel;
    }
    m->type.kind_case = PT(KIND_TOPIC_PERMISSIONS);
    m->type.topic_permissions = p;
}

size_t momento__scope_grants(const momento_token_scope *s)
{
    return s->n;
}

bool momento__scope_is_super_user(const momento_token_scope *s)
{
    return s->super_user;
}

int momento__scope_msgs_fill(momento__scope_msgs *m, const momento_token_scope *s)
{
    permission_messages__permissions__init(&m->perms);
    permission_messages__explicit_permissions__init(&m->explicit_);
    m->grants = NULL;
    m->types = NULL;
    if (s->super_user) {
        m->perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_SUPER_USER;
        m->perms.super_user = PERMISSION_MESSAGES__SUPER_USER_PERMISSIONS__SuperUser;
        return MOMENTO_OK;
    }
    grant_msgs *msgs = momento__malloc((s->n ? s->n : 1) * sizeof(*msgs));
    PermissionMessages__PermissionsType **types =
        momento__malloc((s->n ? s->n : 1) * sizeof(*types));
    if (!msgs || !types) {
        free(msgs);
        free(types);
        return MOMENTO_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < s->n; i++) {
        fill_grant(&msgs[i], &s->grants[i]);
        types[i] = &msgs[i].type;
    }
    m->explicit_.n_permissions = s->n;
    m->explicit_.permissions = types;
    m->perms.kind_case = PERMISSION_MESSAGES__PERMISSIONS__KIND_EXPLICIT;
    m->perms.explicit_ = &m->explicit_;
    m->grants = msgs;
    m->types = types;
    return MOMENTO_OK;
}

void momento__scope_msgs_free(momento__scope_msgs *m)
{
    free(m->grants);
    free(m->types);
}

int momento_generate_disposable_token(momento_client *c, const momento_token_scope *scope,
                                      uint32_t expires_in_s, const char *token_id,
                                      const momento_request_options *opts, momento_callback cb,
                                      void *userdata)
{
    MOMENTO__CHECK(momento__check_request(c, opts, cb));
    /* Momento refuses an empty scope and a token without an expiry;
     * refusing here saves the round trip. There is no upper bound: the
     * SDKs and the service dropped the one-hour cap in February 2026. */
    if (!scope)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT, "the scope is NULL");
    if (scope->super_user)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "a disposable token cannot be a super user: give it explicit "
                               "grants (momento_token_scope_add_*)");
    if (scope->n == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the scope grants nothing: add a cache or topic grant to it");
    if (expires_in_s == 0)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the token has no expiry (expires_in_s is 0): a disposable "
                               "token must expire, 1 s from now or later");
    if (token_id && strlen(token_id) > MOMENTO_DISPOSABLE_TOKEN_ID_MAX)
        return momento__refuse(MOMENTO_ERR_INVALID_ARGUMENT,
                               "the token id is %zu bytes, over %u (MOMENTO_DISPOSABLE_TOKEN_ID_MAX)",
                               strlen(token_id), (unsigned)MOMENTO_DISPOSABLE_TOKEN_ID_MAX);
    if (token_id && momento__check_utf8(token_id, strlen(token_id)) < 0)
        return MOMENTO_ERR_INVALID_ARGUMENT; /* the check said why */

    momento__scope_msgs sm;
    if (momento__scope_msgs_fill(&sm, scope) != MOMENTO_OK)
        return MOMENTO_ERR_NO_MEMORY;
    Token__GenerateDisposableTokenRequest__Expires expires =
        TOKEN____GENERATE_DISPOSABLE_TOKEN_REQUEST__EXPIRES__INIT;
    expires.valid_for_seconds = expires_in_s;
    Token__GenerateDisposableTokenRequest req = TOKEN____GENERATE_DISPOSABLE_TOKEN_REQUEST__INIT;
    req.expires = &expires;
    /* The token service reads the caller's key from the body; the call
     * sends it as `authorization` too, as on every other plane. */
    req.auth_token = c->creds.token;
    req.permissions = &sm.perms;
    req.token_id = (char *)(token_id ? token_id : "");

    /* Packed before this returns: the messages above may go. */
    int rc = momento__call_start(c, MOMENTO__RPC_GENERATE_DISPOSABLE_TOKEN,
                                 momento__decode_generate_disposable_token, NULL, &req.base, opts,
                                 cb, userdata);
    momento__scope_msgs_free(&sm);
    return rc;
}

int momento_generate_disposable_token_sync(momento_client *c, const momento_token_scope *scope,
                                           uint32_t expires_in_s, const char *token_id,
                                           const momento_request_options *opts,
                                           momento_result **ret)
{
    MOMENTO__SYNC(momento_generate_disposable_token(c, scope, expires_in_s, token_id, opts,
                                                    MOMENTO__SYNC_CB));
}

/* ---------------------------------------------------------------- decoder */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 with padding (the v1 key form) of `n` bytes into `out`,
 * which has room for 4 * ((n + 2) / 3) + 1 bytes; NUL-terminated. */
static void b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *out++ = b64_alphabet[v >> 18];
        *out++ = b64_alphabet[(v >> 12) & 63];
        *out++ = b64_alphabet[(v >> 6) & 63];
        *out++ = b64_alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *out++ = b64_alphabet[v >> 18];
        *out++ = b64_alphabet[(v >> 12) & 63];
        *out++ = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        *out++ = '=';
    }
    *out = '\0';
}

/* Appends `s` as a JSON string (quotes included) at `out`; returns the end.
 * `out` has room for 6 bytes per byte of `s` plus 2. */
static char *json_string(char *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    *out++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *out++ = '\\';
            *out++ = (char)*p;
        } else if (*p < 0x20) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[*p >> 4];
            out[5] = hex[*p & 15];
            out += 6;
        } else {
            *out++ = (char)*p;
        }
    }
    *out++ = '"';
    return out;
}

int momento__token_result(momento_result *r, momento__scratch *scratch, const char *endpoint,
                          const char *api_key, const char *refresh_token, uint64_t valid_until)
{
    endpoint = endpoint ? endpoint : "";
    if (!api_key || !*api_key)
        return MOMENTO_ERR_BAD_RESPONSE;
    /* The key form Momento's SDKs hand out for a disposable token and an
     * API key alike (and momento_credentials_from_api_key() reads):
     * base64 of {"endpoint": ..., "api_key": ...}. */
    size_t json_cap =
        sizeof("{\"endpoint\":,\"api_key\":}") + 6 * (strlen(endpoint) + strlen(api_key)) + 4;
    char *json = momento__malloc(json_cap);
    if (!json)
        return MOMENTO_ERR_NO_MEMORY;
    char *p = json;
    memcpy(p, "{\"endpoint\":", 12);
    p = json_string(p + 12, endpoint);
    memcpy(p, ",\"api_key\":", 11);
    p = json_string(p + 11, api_key);
    *p++ = '}';
    size_t json_len = (size_t)(p - json);
    char *key = momento__malloc(4 * ((json_len + 2) / 3) + 1);
    if (!key) {
        free(json);
        return MOMENTO_ERR_NO_MEMORY;
    }
    b64_encode((const uint8_t *)json, json_len, key);
    /* The JSON held the token in the clear: wiped, not just freed. */
    memset(json, 0, json_cap);
    free(json);
    scratch->mem = key;
    r->value = (const uint8_t *)key;
    r->value_len = strlen(key);
    r->field = (const uint8_t *)endpoint;
    r->field_len = strlen(endpoint);
    r->refresh_token = refresh_token;
    r->int_value = (int64_t)(valid_until > INT64_MAX ? INT64_MAX : valid_until);
    r->outcome = MOMENTO_OUTCOME_SUCCESS;
    return MOMENTO_OK;
}

MOMENTO__DECODER(generate_disposable_token)
{
    MOMENTO__UNPACK_ONE(Token__GenerateDisposableTokenResponse, GENERATE_DISPOSABLE_TOKEN);
    return momento__token_result(r, scratch, m->endpoint, m->api_key, NULL, m->valid_until);
}

char *momento__key_token(const char *api_key)
{
    /* A key in the v1 form carries its token as "api_key" (read as
     * momento_credentials_local_with_key() reads it, momento__key_field);
     * anything else, or an empty field, is taken to be the bare token. */
    char *token;
    int rc = momento__key_field(api_key, &token);
    if (rc == -2)
        return NULL;
    if (rc == 1 && token && *token)
        return token;
    free(token);
    size_t n = strlen(api_key) + 1;
    token = momento__malloc(n);
    if (token)
        memcpy(token, api_key, n);
    return token;
}

/* The result of a token or API-key request (the fields read below are
 * other operations' too): its outcome is SUCCESS and it has a key. */
static bool holds_token(const momento_result *r)
{
    return r &&
           (r->rpc == MOMENTO__RPC_GENERATE_DISPOSABLE_TOKEN + 1 ||
            r->rpc == MOMENTO__RPC_GENERATE_API_TOKEN + 1 ||
            r->rpc == MOMENTO__RPC_REFRESH_API_TOKEN + 1) &&
           r->outcome == MOMENTO_OUTCOME_SUCCESS && r->value && r->field;
}

const char *momento_result_token_api_key(const momento_result *r)
{
    return holds_token(r) ? (const char *)r->value : "";
}

const char *momento_result_token_endpoint(const momento_result *r)
{
    return holds_token(r) ? (const char *)r->field : "";
}

uint64_t momento_result_token_valid_until(const momento_result *r)
{
    return holds_token(r) ? (uint64_t)r->int_value : 0;
}


const char *momento_result_token_refresh_token(const momento_result *r)
{
    return holds_token(r) && r->refresh_token ? r->refresh_token : "";
}
