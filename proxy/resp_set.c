/* RESP: the set commands (being written). */
#include "resp.h"

const resp_cmd resp_set_cmds[] = {
    {NULL, 0, NULL},
};
