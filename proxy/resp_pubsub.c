/* RESP: the pubsub commands (being written). */
#include "resp.h"

const resp_cmd resp_pubsub_cmds[] = {
    {NULL, 0, NULL},
};
