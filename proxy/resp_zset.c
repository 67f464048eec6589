/* RESP: the zset commands (being written). */
#include "resp.h"

const resp_cmd resp_zset_cmds[] = {
    {NULL, 0, NULL},
};
