/*
 * main.c - samsa-admin: the command line. Global options (anywhere on the
 * line, before or after the command):
 *
 *   -b, --bootstrap-server HOST:PORT[,HOST:PORT...]   required
 *       --timeout MS    per request, and the budget of the controller
 *                       retries (default 30000)
 *   -h, --help          the overview; 'samsa-admin COMMAND --help' a command's
 *       --version
 *
 * then the command and its own arguments (commands.h). Exit status: 0,
 * 1 when anything failed (a line on stderr says what), 2 for a usage
 * error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tools/commands.h"
#include "tools/parse.h"

static const adm_command *const commands[] = {
	&adm_cmd_brokers,
	&adm_cmd_topics,
	&adm_cmd_describe,
	&adm_cmd_create_topic,
	&adm_cmd_delete_topic,
	&adm_cmd_add_partitions,
	&adm_cmd_config,
	&adm_cmd_elect_leaders,
	&adm_cmd_reassign,
	&adm_cmd_reassignments,
	&adm_cmd_drain,
	&adm_cmd_log_dirs,
	&adm_cmd_scram,
	&adm_cmd_acls,
	&adm_cmd_quotas,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

void adm_getopt_reset(void)
{
	optind = 0; /* GNU: start over, re-read the environment */
	opterr = 0;
}

int adm_bad_option(adm_ctx *ctx, char **argv)
{
	if (optopt)
		return adm_usage(ctx, "option '-%c' is unknown or lacks its value", optopt);
	return adm_usage(ctx, "option '%s' is unknown or lacks its value", argv[optind - 1]);
}

static void overview(FILE *f)
{
	fprintf(f, "usage: samsa-admin -b HOST:PORT[,HOST:PORT...] [--command-config FILE]\n"
		   "                   [--timeout MS] COMMAND [ARGS]\n"
		   "\n"
		   "--command-config FILE: Kafka's client properties for a secured listener\n"
		   "(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*,\n"
		   "ssl.keystore.*, ssl.endpoint.identification.algorithm), as Kafka's tools\n"
		   "take them.\n"
		   "\n"
		   "Administer a Samsa (or Kafka) cluster through Kafka's admin requests.\n"
		   "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-15s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\n"
		   "'samsa-admin COMMAND --help' describes a command. Requests that only the\n"
		   "controller serves go to the controller Metadata names (again to the new one\n"
		   "after NOT_CONTROLLER). Exit status: 0; 1 when anything failed, with a line on\n"
		   "stderr naming Kafka's error; 2 for a usage error.\n");
}

static const adm_command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

/* "--name=value" or "--name value": the value, or NULL when arg is not
 * --name. *i moves past a separate value. */
static const char *long_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

int main(int argc, char **argv)
{
	const char *bootstrap = NULL;
	const char *command_config = NULL;
	long timeout_ms = 30000;
	bool help = false;
	const adm_command *cmd = NULL;
	/* the command's own arguments, global options taken out */
	char **cargv = calloc((size_t)argc + 1, sizeof(char *));
	int cargc = 0;
	if (!cargv)
		return 1;
	bool rest = false; /* after "--": everything is the command's */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool missing = false;
		const char *v;
		if (rest) {
			cargv[cargc++] = argv[i];
		} else if (strcmp(a, "--") == 0 && cmd) {
			rest = true;
			cargv[cargc++] = argv[i];
		} else if (strncmp(a, "-b", 2) == 0) {
			if (a[2])
				bootstrap = a + 2;
			else if (i + 1 < argc)
				bootstrap = argv[++i];
			else
				missing = true;
		} else if ((v = long_value(argc, argv, &i, "--bootstrap-server", &missing)) || missing) {
			bootstrap = v;
		} else if ((v = long_value(argc, argv, &i, "--command-config", &missing)) || missing) {
			command_config = v;
		} else if ((v = long_value(argc, argv, &i, "--timeout", &missing)) || missing) {
			if (v && !adm_parse_int(v, 1, 3600000, &timeout_ms)) {
				fprintf(stderr, "samsa-admin: --timeout '%s' is not a number of ms "
						"(1..3600000)\n", v);
				free(cargv);
				return 2;
			}
		} else if (strcmp(a, "--help") == 0 || (!cmd && strcmp(a, "-h") == 0)) {
			help = true;
		} else if (strcmp(a, "--version") == 0 && !cmd) {
			printf("samsa-admin %s\n", PACKAGE_VERSION);
			free(cargv);
			return 0;
		} else if (!cmd && a[0] == '-') {
			fprintf(stderr, "samsa-admin: unknown option '%s' (see samsa-admin --help)\n", a);
			free(cargv);
			return 2;
		} else if (!cmd) {
			cmd = find(a);
			if (!cmd) {
				fprintf(stderr, "samsa-admin: unknown command '%s' (see samsa-admin --help)\n",
					a);
				free(cargv);
				return 2;
			}
			cargv[cargc++] = argv[i];
		} else {
			cargv[cargc++] = argv[i];
		}
		if (missing) {
			fprintf(stderr, "samsa-admin: option '%s' needs a value\n", a);
			free(cargv);
			return 2;
		}
	}
	if (help) {
		if (cmd)
			fputs(cmd->help, stdout);
		else
			overview(stdout);
		free(cargv);
		return 0;
	}
	if (!cmd) {
		overview(stderr);
		free(cargv);
		return 2;
	}
	if (!bootstrap || !*bootstrap) {
		fprintf(stderr, "samsa-admin: %s: -b HOST:PORT (--bootstrap-server) is required\n",
			cmd->name);
		free(cargv);
		return 2;
	}
	adm_security sec;
	adm_security_none(&sec);
	/* OpenSSL writes to the socket with write(2), which has no
	 * MSG_NOSIGNAL: a broker that closed must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (command_config) {
		char err[768];
		if (adm_security_load(&sec, command_config, err, sizeof(err)) < 0) {
			fprintf(stderr, "samsa-admin: %s: --command-config %s\n", cmd->name, err);
			free(cargv);
			return 1;
		}
	}
	adm_ctx ctx;
	adm_init(&ctx, cmd->name, bootstrap, (int)timeout_ms);
	ctx.sec = &sec;
	int rc = cmd->run(&ctx, cargc, cargv);
	fflush(stdout);
	adm_fini(&ctx);
	adm_security_free(&sec);
	free(cargv);
	return rc;
}
