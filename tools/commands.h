/*
 * commands.h - samsa-admin's commands, one group per file:
 *   cmd_topics.c    topics, describe, create-topic, delete-topic, add-partitions
 *   cmd_cluster.c   brokers, log-dirs
 *   cmd_config.c    config
 *   cmd_elect.c     elect-leaders
 *   cmd_reassign.c  reassign, reassignments, drain
 *   cmd_scram.c     scram
 *   cmd_acls.c      acls
 *   cmd_quotas.c    quotas
 *
 * A command gets the run's context (admin.h; ctx->cmd is its name) and its
 * own arguments, argv[0] being its name; it parses them with getopt_long
 * (main.c has taken out the global options and handles --help) and
 * returns the exit status: 0, 1 after an error (adm_error), 2 for a usage
 * error (adm_usage). Results go to stdout, one item per line, fields
 * "Name: value" separated by tabs (describe and friends) or plain lines;
 * partitions are written TOPIC:PARTITION, as on the command line.
 */
#ifndef SAMSA_TOOLS_COMMANDS_H
#define SAMSA_TOOLS_COMMANDS_H

#include "tools/admin.h"

typedef struct adm_command {
	const char *name;
	const char *synopsis;   /* the arguments, for the overview */
	const char *summary;    /* one line */
	const char *help;       /* the full text of 'samsa-admin <name> --help' */
	int (*run)(adm_ctx *ctx, int argc, char **argv);
} adm_command;

extern const adm_command adm_cmd_topics, adm_cmd_describe, adm_cmd_create_topic,
	adm_cmd_delete_topic, adm_cmd_add_partitions;
extern const adm_command adm_cmd_brokers, adm_cmd_log_dirs;
extern const adm_command adm_cmd_config;
extern const adm_command adm_cmd_elect_leaders;
extern const adm_command adm_cmd_reassign, adm_cmd_reassignments, adm_cmd_drain;
extern const adm_command adm_cmd_scram, adm_cmd_acls, adm_cmd_quotas;

/* getopt_long over a command's arguments, reset for each command: GNU
 * getopt is told to start over (optind 0) and print nothing (opterr 0);
 * the caller reports '?' with adm_bad_option. */
void adm_getopt_reset(void);
/* The usage error for the option getopt_long just refused. Returns 2. */
int adm_bad_option(adm_ctx *ctx, char **argv);

#endif
