/* Subscribe, publish, and read items until the one we want arrives.
 * MOMENTO_ENDPOINT=127.0.0.1:8080 for a momento-local with cache "demo". */
#include <momento/momento.h>
#include <momento/topics.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int got;

static void on_event(momento_subscription *sub, const momento_topic_event *ev,
                     void *userdata)
{
    (void)sub;
    (void)userdata;
    if (ev->kind == MOMENTO_TOPIC_ITEM) /* value valid only in here */
        printf("item %llu: %.*s\n", (unsigned long long)ev->sequence_number,
               (int)ev->value_len, (const char *)ev->value);
    if (ev->kind == MOMENTO_TOPIC_ITEM || ev->kind == MOMENTO_TOPIC_END)
        atomic_store(&got, 1);
}

int main(void)
{
    momento_credentials *creds;
    momento_client *c;
    if (momento_credentials_from_env(&creds) != MOMENTO_OK)
        return 1;
    int rc = momento_client_new(&c, NULL, creds);
    momento_credentials_free(creds);
    if (rc != MOMENTO_OK)
        return 1;
    momento_subscription *sub = NULL;
    /* Returns once the subscription is up (its first message came). */
    rc = momento_topic_subscribe_sync(c, "demo", "news", NULL, on_event, NULL, &sub);
    if (rc == MOMENTO_OK)
        rc = momento_topic_publish_text_sync(c, "demo", "news", MOMENTO_STR("hello"), NULL,
                                             NULL);
    for (int i = 0; rc == MOMENTO_OK && !atomic_load(&got) && i < 500; i++)
        usleep(10 * 1000);
    momento_topic_unsubscribe(sub); /* its END event follows */
    momento_subscription_free(sub);
    momento_client_free(c);
    return rc == MOMENTO_OK && atomic_load(&got) ? 0 : 1;
}
