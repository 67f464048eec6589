/* leaderboard: a game leaderboard, in a Momento sorted set or in Momento's
 * leaderboard service (--service leaderboard).
 *
 * One sorted set holds every player (the element) with their points (the
 * score); or one leaderboard holds every player's id with their points.
 * The program submits a score for each of --players players, awards a few
 * bonuses, and then asks the questions a game asks of its
 * board: the top 10, one player's rank and score, who scores within a band,
 * and how many do. Scores come from --seed, so a run can be repeated;
 * --verbose prints every score submitted.
 *
 * The two backends answer the same questions in different ways, and the
 * differences are the point: a sorted set's elements are any bytes (here
 * the players' names), it increments a score atomically, counts a score
 * band in one call and expires with its TTL; a leaderboard's elements are
 * numeric ids (player-0042 is id 42, the newcomer the next id after the
 * last player), it has no increment (a bonus is a read and an upsert, so
 * two writers could race), a band is counted by paging through it, and it
 * has no TTL. In return it is built for ranking: one call gives an id's
 * rank and score, and competition ranks (ties sharing a rank) come from
 * momento_leaderboard_get_competition_rank().
 *
 * Every call here is the blocking (_sync) form. Each returns the request's
 * error code and, once the request was sent, a result this program owns and
 * must free with momento_result_free(), failures included; a refused request
 * (bad arguments) leaves the result NULL. Where the requests go is shared
 * with the other examples (common/target.h): --endpoint HOST:PORT
 * [--insecure | --tls-roots FILE], MOMENTO_API_KEY, or a local server
 * started in-process.
 *
 * Run with --help for the options. */
#include "common/target.h"

#include <momento/leaderboards.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const prog = "leaderboard";

/* The sorted set's key in the cache, or the leaderboard's name. */
static const char *const board = "weekly-scores";

/* Scores are whole points from 0 to 99,999 before bonuses. */
#define MAX_POINTS 100000

/* Scores go up in calls of this many elements: one request per call, and a
 * request must stay under Momento's size limit (about 10 MiB). */
#define PUT_BATCH 100

typedef struct options {
    ex_target_options target; /* --endpoint, --insecure, --tls-roots */
    const char *cache;
    int players;
    unsigned long long seed;
    const char *player;  /* whose rank to look up; NULL = the first player */
    int band_min, band_max;
    bool verbose;
    bool keep;
    bool service; /* --service leaderboard */
} options;

static void usage(void)
{
    printf("Usage: %s [OPTION]...\n"
           "A game leaderboard in a Momento sorted set (or Momento's leaderboard service):\n"
           "submits a score per player, awards bonuses, then prints the top 10, one\n"
           "player's rank and score, and the players in a score band.\n\n" EX_TARGET_HELP "\n"
           "Leaderboard:\n"
           "  --cache NAME           cache to use, created if missing (default leaderboard)\n"
           "  --players N            players to submit scores for, 1 to 100000 (default 1000)\n"
           "  --seed N               seed of the scores (default 1)\n"
           "  --player NAME          whose rank and score to show (default the first player)\n"
           "  --band MIN:MAX         the score band to count and list (default 40000:49999)\n"
           "  --verbose              print every score submitted\n"
           "  --keep                 leave the board in the cache (default: delete it)\n"
           "  --service KIND         sorted-set (default) or leaderboard: Momento's\n"
           "                         leaderboard service, players as numeric ids\n"
           "  --help                 this text\n",
           prog);
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        EX_TARGET_LONGOPTS,
        {"cache", required_argument, NULL, 'C'},    {"players", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},     {"player", required_argument, NULL, 'p'},
        {"band", required_argument, NULL, 'b'},     {"verbose", no_argument, NULL, 'v'},
        {"keep", no_argument, NULL, 'k'},           {"help", no_argument, NULL, 'h'},
        {"service", required_argument, NULL, 'S'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->cache = "leaderboard";
    o->players = 1000;
    o->seed = 1;
    o->band_min = 40000;
    o->band_max = 49999;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case EX_OPT_ENDPOINT:
        case EX_OPT_INSECURE:
        case EX_OPT_TLS_ROOTS:
        case EX_OPT_TRANSPORT:
        case EX_OPT_PS_ENDPOINT:
            if (ex_target_option(prog, ch, optarg, &o->target))
                return 2;
            break;
        case 'C':
            if (ex_cache_option(prog, optarg, &o->cache))
                return 2;
            break;
        case 'n':
            if (!ex_parse_int(optarg, 1, 100000, &o->players))
                return ex_bad_option(prog, "--players", optarg, "must be 1 to 100000");
            break;
        case 's': {
            char *end;
            o->seed = strtoull(optarg, &end, 10);
            if (!*optarg || *end || *optarg == '-')
                return ex_bad_option(prog, "--seed", optarg, "must be a non-negative integer");
            break;
        }
        case 'p':
            if (!*optarg)
                return ex_bad_option(prog, "--player", optarg, "must not be empty");
            o->player = optarg;
            break;
        case 'b': {
            /* MIN:MAX, two integers in points. */
            char lo[16];
            const char *colon = strchr(optarg, ':');
            size_t n = colon ? (size_t)(colon - optarg) : 0;
            if (!colon || n >= sizeof(lo))
                return ex_bad_option(prog, "--band", optarg, "must be MIN:MAX");
            memcpy(lo, optarg, n);
            lo[n] = '\0';
            if (!ex_parse_int(lo, 0, 1000000000, &o->band_min) ||
                !ex_parse_int(colon + 1, 0, 1000000000, &o->band_max) || o->band_min > o->band_max)
                return ex_bad_option(prog, "--band", optarg,
                                     "must be MIN:MAX with 0 <= MIN <= MAX <= 1000000000");
            break;
        }
        case 'v': o->verbose = true; break;
        case 'k': o->keep = true; break;
        case 'S':
            if (strcmp(optarg, "leaderboard") == 0)
                o->service = true;
            else if (strcmp(optarg, "sorted-set") != 0)
                return ex_bad_option(prog, "--service", optarg,
                                     "must be sorted-set or leaderboard");
            break;
        case 'h': usage(); return 1;
        default: return 2;
        }
    }
    if (optind < argc)
        return ex_bad_option(prog, "argument", argv[optind], "no positional arguments are taken");
    return ex_check_target(prog, &o->target);
}

/* Reports a failed call and frees its result; returns 1, the exit status.
 * `rc` is what the call returned, `r` its result: NULL when the request was
 * refused before it was sent, otherwise carrying the server's message. */
static int fail(const char *what, int rc, momento_result *r)
{
    const char *msg = r ? momento_result_message(r) : "";
    fprintf(stderr, "%s: %s failed: %s (%s)%s%s\n", prog, what, momento_error_name(rc),
            momento_strerror(rc), *msg ? ": " : "", msg);
    momento_result_free(r);
    return 1;
}

/* splitmix64: a small, good generator, so a seed gives the same scores on
 * every machine. */
static unsigned long long next_rand(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* "player-0042": zero-padded to the width of the largest number, so names
 * sort the way their numbers do. */
static void player_name(char *buf, size_t size, int width, int i)
{
    snprintf(buf, size, "player-%0*d", width, i);
}

typedef struct app {
    momento_client *client;
    const options *o;
    int width;  /* digits in --players */
    /* The board's TTL: it lives an hour after its last write (refresh = 1:
     * every write resets it), so an abandoned board goes away by itself. */
    momento_collection_ttl ttl;
    unsigned long long rng;
} app;

/* ------------------------------------------------------------------------
 * The same board in Momento's leaderboard service (--service leaderboard).
 * Its name is the board's; it lives in the cache beside the keys, not as
 * one of them. */

/* A player's id: player-0042 is 42, the newcomer the id after the last
 * player; 0 for a name that is neither (no id: not on the board). */
static uint32_t player_id(const app *a, const char *player)
{
    if (strcmp(player, "newcomer") == 0)
        return (uint32_t)a->o->players + 1;
    int n;
    if (strncmp(player, "player-", 7) != 0 || !ex_parse_int(player + 7, 1, a->o->players, &n))
        return 0;
    return (uint32_t)n;
}

static void id_name(const app *a, uint32_t id, char *buf, size_t size)
{
    if (id == (uint32_t)a->o->players + 1)
        snprintf(buf, size, "newcomer");
    else
        player_name(buf, size, a->width, (int)id);
}

/* Prints a leaderboard read's elements: rank (when `with_rank`), name,
 * score. Ranks come with each element, 0-based; people count from 1. */
static void lb_print(const app *a, const momento_result *r, bool with_rank, const char *indent)
{
    for (size_t i = 0; i < momento_result_item_count(r); i++) {
        momento_ranked_element e;
        char name[32];
        if (momento_result_ranked(r, i, &e) != MOMENTO_OK)
            continue;
        id_name(a, e.id, name, sizeof(name));
        if (with_rank)
            printf("%s%2u. %-16s %8.0f\n", indent, (unsigned)e.rank + 1, name, e.score);
        else
            printf("%s%-16s %8.0f\n", indent, name, e.score);
    }
}

static int lb_submit_scores(app *a)
{
    momento_leaderboard_element elements[PUT_BATCH];
    char name[32];
    int calls = 0;
    for (int first = 1; first <= a->o->players; first += PUT_BATCH) {
        size_t n = 0;
        for (int i = first; i <= a->o->players && n < PUT_BATCH; i++, n++) {
            elements[n].id = (uint32_t)i;
            elements[n].score = (double)(next_rand(&a->rng) % MAX_POINTS);
            if (a->o->verbose) {
                player_name(name, sizeof(name), a->width, i);
                printf("  submit %s %.0f\n", name, elements[n].score);
            }
        }
        momento_result *r;
        int rc = momento_leaderboard_upsert_sync(a->client, a->o->cache, board, elements, n, NULL,
                                                 &r);
        if (rc != MOMENTO_OK)
            return fail("leaderboard_upsert", rc, r);
        momento_result_free(r);
        calls++;
    }
    printf("submitted %d scores in %d leaderboard_upsert calls (up to %d each)\n", a->o->players,
           calls, PUT_BATCH);
    return 0;
}

/* No increment in a leaderboard: read the score (get_rank gives it with
 * the rank), add, upsert. Another writer between the two calls would be
 * overwritten; the sorted set's increment_score has no such window. */
static int lb_award_bonus(app *a, const char *player, double amount)
{
    uint32_t id = player_id(a, player);
    momento_result *r;
    int rc = momento_leaderboard_get_rank_sync(a->client, a->o->cache, board, &id, 1,
                                               MOMENTO_DESCENDING, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_get_rank", rc, r);
    momento_ranked_element e = {0};
    double score = momento_result_ranked(r, 0, &e) == MOMENTO_OK ? e.score : 0;
    momento_result_free(r);
    momento_leaderboard_element up = {.id = id, .score = score + amount};
    rc = momento_leaderboard_upsert_sync(a->client, a->o->cache, board, &up, 1, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_upsert", rc, r);
    momento_result_free(r);
    printf("bonus %s +%.0f -> %.0f (get_rank, upsert)\n", player, amount, up.score);
    return 0;
}

static int lb_show_size(app *a, int64_t *ret_size)
{
    momento_result *r;
    int rc = momento_leaderboard_length_sync(a->client, a->o->cache, board, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_length", rc, r);
    *ret_size = momento_result_int(r); /* no board reads as 0 */
    printf("players on the board: %lld (length)\n", (long long)*ret_size);
    momento_result_free(r);
    return 0;
}

static int lb_show_top10(app *a)
{
    momento_result *r;
    int rc = momento_leaderboard_fetch_by_rank_sync(a->client, a->o->cache, board, 0, 10,
                                                    MOMENTO_DESCENDING, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_fetch_by_rank", rc, r);
    printf("top 10 (fetch_by_rank, descending):\n");
    if (momento_result_item_count(r) > 0)
        lb_print(a, r, true, "  ");
    else
        printf("  (the board is empty)\n");
    momento_result_free(r);
    return 0;
}

static int lb_show_player(app *a, const char *player, int64_t size)
{
    uint32_t id = player_id(a, player);
    momento_ranked_element e;
    int found = 0;
    if (id) {
        momento_result *r;
        int rc = momento_leaderboard_get_rank_sync(a->client, a->o->cache, board, &id, 1,
                                                   MOMENTO_DESCENDING, NULL, &r);
        if (rc != MOMENTO_OK)
            return fail("leaderboard_get_rank", rc, r);
        found = momento_result_ranked(r, 0, &e) == MOMENTO_OK;
        momento_result_free(r);
    }
    /* One call answers both: ids not on the board are left out. */
    if (found)
        printf("%s: rank %u of %lld, score %.0f (get_rank descending)\n", player,
               (unsigned)e.rank + 1, (long long)size, e.score);
    else
        printf("%s: not on the board (get_rank left it out)\n", player);
    return 0;
}

static int lb_show_band(app *a)
{
    /* Whole points: [min, max + 1) is the band's [min, max]. */
    double lo = a->o->band_min, hi = a->o->band_max + 1.0;
    long long count = 0;
    momento_result *r;
    /* No count by score: page through the band, the most Momento returns
     * at a time. */
    for (uint32_t offset = 0;; offset += MOMENTO_LEADERBOARD_MAX_ELEMENTS) {
        int rc = momento_leaderboard_fetch_by_score_sync(a->client, a->o->cache, board, lo, hi,
                                                         MOMENTO_ASCENDING, offset, 0, NULL, &r);
        if (rc != MOMENTO_OK)
            return fail("leaderboard_fetch_by_score", rc, r);
        size_t n = momento_result_item_count(r);
        momento_result_free(r);
        count += (long long)n;
        if (n < MOMENTO_LEADERBOARD_MAX_ELEMENTS)
            break;
    }
    printf("players scoring %d to %d: %lld (fetch_by_score pages)\n", a->o->band_min,
           a->o->band_max, count);
    int rc = momento_leaderboard_fetch_by_score_sync(a->client, a->o->cache, board, lo, hi,
                                                     MOMENTO_DESCENDING, 0, 5, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_fetch_by_score", rc, r);
    printf("the top 5 of them (fetch_by_score, descending, count 5):\n");
    if (momento_result_item_count(r) > 0)
        lb_print(a, r, false, "  ");
    else
        printf("  (nobody)\n");
    momento_result_free(r);
    return 0;
}

static int lb_delete_board(app *a, const char *why)
{
    momento_result *r;
    int rc = momento_leaderboard_delete_sync(a->client, a->o->cache, board, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("leaderboard_delete", rc, r);
    momento_result_free(r);
    printf("leaderboard '%s' deleted (%s)\n", board, why);
    return 0;
}

/* Submits one score per player, PUT_BATCH players per call. */
static int submit_scores(app *a)
{
    if (a->o->service)
        return lb_submit_scores(a);
    char names[PUT_BATCH][32];
    const void *values[PUT_BATCH];
    size_t lens[PUT_BATCH];
    double scores[PUT_BATCH];
    int calls = 0;
    for (int first = 1; first <= a->o->players; first += PUT_BATCH) {
        size_t n = 0;
        for (int i = first; i <= a->o->players && n < PUT_BATCH; i++, n++) {
            player_name(names[n], sizeof(names[n]), a->width, i);
            values[n] = names[n];
            lens[n] = strlen(names[n]);
            scores[n] = (double)(next_rand(&a->rng) % MAX_POINTS);
            if (a->o->verbose)
                printf("  submit %s %.0f\n", names[n], scores[n]);
        }
        /* The names and scores are copied before the call returns, so the
         * arrays are reused for the next call. */
        momento_result *r;
        int rc = momento_sorted_set_put_elements_sync(a->client, a->o->cache, board,
                                                      strlen(board), values, lens, scores, n,
                                                      &a->ttl, NULL, &r);
        if (rc != MOMENTO_OK)
            return fail("put_elements", rc, r);
        momento_result_free(r);
        calls++;
    }
    printf("submitted %d scores in %d put_elements calls (up to %d each)\n", a->o->players,
           calls, PUT_BATCH);
    return 0;
}

/* Adds `amount` to a player's score; a player not on the board starts
 * from 0. The new score comes back in the same call. */
static int award_bonus(app *a, const char *player, double amount)
{
    if (a->o->service)
        return lb_award_bonus(a, player, amount);
    momento_result *r;
    int rc = momento_sorted_set_increment_score_sync(a->client, a->o->cache, board, strlen(board),
                                                     player, strlen(player), amount, &a->ttl,
                                                     NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("increment_score", rc, r);
    printf("bonus %s +%.0f -> %.0f (increment_score)\n", player, amount, momento_result_score(r));
    momento_result_free(r);
    return 0;
}

static int award_bonuses(app *a)
{
    /* Three random players, the last lifted past anyone's reach (the most
     * another can have is 99,999 + 20,000), and a newcomer who was never
     * submitted. */
    static const double amounts[3] = {5000, 20000, 200000};
    char name[32];
    for (int k = 0; k < 3; k++) {
        int i = 1 + (int)(next_rand(&a->rng) % (unsigned long long)a->o->players);
        player_name(name, sizeof(name), a->width, i);
        if (award_bonus(a, name, amounts[k]))
            return 1;
    }
    return award_bonus(a, "newcomer", 42000);
}

/* Prints a fetch's elements, one line each: rank (when `first_rank` > 0),
 * name, score. The items belong to `r`. */
static void print_elements(const momento_result *r, int first_rank, const char *indent)
{
    size_t n = momento_result_item_count(r);
    for (size_t i = 0; i < n; i++) {
        const momento_result *item = momento_result_item(r, i);
        size_t len;
        const char *name = momento_result_value(item, &len);
        if (first_rank > 0)
            printf("%s%2d. %-16.*s %8.0f\n", indent, first_rank + (int)i, (int)len, name,
                   momento_result_score(item));
        else
            printf("%s%-16.*s %8.0f\n", indent, (int)len, name, momento_result_score(item));
    }
}

static int show_size(app *a, int64_t *ret_size)
{
    if (a->o->service)
        return lb_show_size(a, ret_size);
    momento_result *r;
    int rc = momento_sorted_set_length_sync(a->client, a->o->cache, board, strlen(board), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("length", rc, r);
    /* MISS: no board at all (deleted, or expired), which is 0 players. */
    *ret_size = momento_result_is_hit(r) ? momento_result_int(r) : 0;
    printf("players on the board: %lld (length)\n", (long long)*ret_size);
    momento_result_free(r);
    return 0;
}

static int show_top10(app *a)
{
    if (a->o->service)
        return lb_show_top10(a);
    momento_result *r;
    /* Ranks [0, 10) counted from the highest score. */
    int rc = momento_sorted_set_fetch_by_rank_sync(a->client, a->o->cache, board, strlen(board), 0,
                                                   10, MOMENTO_DESCENDING, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("fetch_by_rank", rc, r);
    printf("top 10 (fetch_by_rank, descending):\n");
    if (momento_result_is_hit(r))
        print_elements(r, 1, "  ");
    else
        printf("  (the board is empty)\n");
    momento_result_free(r);
    return 0;
}

static int show_player(app *a, const char *player, int64_t size)
{
    if (a->o->service)
        return lb_show_player(a, player, size);
    momento_result *rank, *score;
    int rc = momento_sorted_set_get_rank_sync(a->client, a->o->cache, board, strlen(board), player,
                                              strlen(player), MOMENTO_DESCENDING, NULL, &rank);
    if (rc != MOMENTO_OK)
        return fail("get_rank", rc, rank);
    rc = momento_sorted_set_get_score_sync(a->client, a->o->cache, board, strlen(board), player,
                                           strlen(player), NULL, &score);
    if (rc != MOMENTO_OK) {
        momento_result_free(rank);
        return fail("get_score", rc, score);
    }
    /* A MISS answers "no such player" (or no board). get_rank is 0-based;
     * people count from 1. */
    if (momento_result_is_hit(rank) && momento_result_is_hit(score))
        printf("%s: rank %lld of %lld, score %.0f (get_rank descending, get_score)\n", player,
               (long long)momento_result_int(rank) + 1, (long long)size,
               momento_result_score(score));
    else
        printf("%s: not on the board (get_rank and get_score missed)\n", player);
    momento_result_free(rank);
    momento_result_free(score);
    return 0;
}

static int show_band(app *a)
{
    if (a->o->service)
        return lb_show_band(a);
    double lo = a->o->band_min, hi = a->o->band_max;
    momento_result *r;
    /* Both bounds are inclusive. */
    int rc = momento_sorted_set_length_by_score_sync(a->client, a->o->cache, board, strlen(board),
                                                     lo, hi, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("length_by_score", rc, r);
    printf("players scoring %.0f to %.0f: %lld (length_by_score)\n", lo, hi,
           momento_result_is_hit(r) ? (long long)momento_result_int(r) : 0LL);
    momento_result_free(r);

    /* The best five of them: descending from `hi`, skip none, at most 5. */
    rc = momento_sorted_set_fetch_by_score_sync(a->client, a->o->cache, board, strlen(board), lo,
                                                hi, MOMENTO_DESCENDING, 0, 5, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("fetch_by_score", rc, r);
    printf("the top 5 of them (fetch_by_score, descending, count 5):\n");
    if (momento_result_is_hit(r) && momento_result_item_count(r) > 0)
        print_elements(r, 0, "  ");
    else
        printf("  (nobody)\n");
    momento_result_free(r);
    return 0;
}

/* A collection is one cache item: delete removes the whole board. */
static int delete_board(app *a, const char *why)
{
    if (a->o->service)
        return lb_delete_board(a, why);
    momento_result *r;
    int rc = momento_delete_sync(a->client, a->o->cache, board, strlen(board), NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("delete", rc, r);
    momento_result_free(r);
    printf("board '%s' deleted (%s)\n", board, why);
    return 0;
}

static int ensure_cache(app *a)
{
    momento_result *r;
    int rc = momento_create_cache_sync(a->client, a->o->cache, NULL, &r);
    if (rc != MOMENTO_OK)
        return fail("create_cache", rc, r);
    printf("cache '%s': %s\n", a->o->cache,
           momento_result_outcome(r) == MOMENTO_OUTCOME_CREATED ? "created" : "already exists");
    momento_result_free(r);
    return 0;
}

static int run(app *a)
{
    char first[32];
    int64_t size = 0;
    player_name(first, sizeof(first), a->width, 1);
    if (ensure_cache(a) || delete_board(a, "a fresh start") || submit_scores(a) ||
        award_bonuses(a) || show_size(a, &size) || show_top10(a) ||
        show_player(a, a->o->player ? a->o->player : first, size) || show_band(a))
        return 1;
    return a->o->keep ? 0 : delete_board(a, "done");
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;

    ex_target t;
    if (ex_target_open(&t, prog, &o.target) != MOMENTO_OK)
        return 1;
    printf("%s: target %s; %d players, seed %llu, %s\n", prog, t.description, o.players, o.seed,
           o.service ? "leaderboard service" : "sorted set");

    app a = {.o = &o, .ttl = {3600 * 1000, 1}, .rng = o.seed};
    a.width = snprintf(NULL, 0, "%d", o.players);
    if (a.width < 4)
        a.width = 4;
    rc = ex_target_client_new(&t, &a.client);
    int status = rc != MOMENTO_OK ? fail("client_new", rc, NULL) : run(&a);
    /* Frees the client after its last callback; then the server can stop. */
    momento_client_free(a.client);
    ex_target_close(&t);
    return status;
}
