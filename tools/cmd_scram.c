/*
 * cmd_scram.c - users' SCRAM credentials (KIP-554; kafka-configs.sh
 * --entity-type users with SCRAM-SHA-256=[iterations=N,password=P]):
 *
 *   scram set USER --mechanism M [--iterations N] --password P|--password-file F
 *                            AlterUserScramCredentials, one upsertion: a
 *                            fresh random salt and SaltedPassword =
 *                            Hi(password, salt, N) from
 *                            broker/security/scram.h (the broker derives
 *                            StoredKey and ServerKey from it; the password
 *                            never leaves this process);
 *   scram delete USER --mechanism M
 *                            AlterUserScramCredentials, one deletion;
 *   scram describe [USER...] DescribeUserScramCredentials: the mechanisms
 *                            and iteration counts, never the credentials.
 *
 * Alterations go to the controller (Kafka's admin client routes
 * AlterUserScramCredentials there), descriptions to any broker.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "broker/security/sasl.h"
#include "broker/security/scram.h"
#include "protocol/err.h"
#include "tools/api.h"
#include "tools/commands.h"
#include "tools/parse.h"

/* Kafka's ScramMechanism type bytes on the wire. */
#define WIRE_SHA_256 1
#define WIRE_SHA_512 2
/* kafka-configs.sh's default iteration count. */
#define DEFAULT_ITERATIONS 4096
/* Bytes of a fresh salt. */
#define SALT_BYTES 32
#define MAX_PASSWORD 1024

static int8_t wire_of(const char *name)
{
	int m = brk_sasl_mechanism_of(name, strlen(name));
	return m == BRK_SASL_SCRAM_SHA_256 ? WIRE_SHA_256 : m == BRK_SASL_SCRAM_SHA_512 ? WIRE_SHA_512 : 0;
}

static const char *wire_name(int8_t w)
{
	return w == WIRE_SHA_256 ? "SCRAM-SHA-256" : w == WIRE_SHA_512 ? "SCRAM-SHA-512" : "UNKNOWN";
}

/* The first line of path ("-": stdin) into out, without its newline. 0
 * or -1. */
static int read_password(const char *path, char *out, size_t cap)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (!f)
		return -1;
	int rc = fgets(out, (int)cap, f) ? 0 : -1;
	if (f != stdin)
		fclose(f);
	if (rc == 0)
		out[strcspn(out, "\r\n")] = '\0';
	return rc;
}

static bool not_controller(const void *response)
{
	const AlterUserScramCredentialsResponse *r = response;
	for (int32_t i = 0; i < r->results_count; i++)
		if (r->results[i].error_code == KERR_NOT_CONTROLLER)
			return true;
	return false;
}

static int alter(adm_ctx *ctx, const AlterUserScramCredentialsRequest *req, const char *user,
		 const char *done)
{
	AlterUserScramCredentialsResponse resp;
	int16_t v;
	if (adm_controller_call(ctx, &adm_api_alter_user_scram_credentials, req, &resp, &v,
				not_controller) < 0)
		return 1;
	if (resp.results_count != 1) {
		adm_error(ctx, "user '%s': the broker answered for %d users", user,
			  (int)resp.results_count);
		return 1;
	}
	if (resp.results[0].error_code != 0) {
		adm_error(ctx, "user '%s': %s", user,
			  adm_errstr(ctx, resp.results[0].error_code, resp.results[0].error_message));
		return 1;
	}
	printf("%s\n", done);
	return 0;
}

static int describe(adm_ctx *ctx, int n, char **users)
{
	DescribeUserScramCredentialsRequest req;
	DescribeUserScramCredentialsRequest_init(&req);
	if (n > 0) {
		req.users = adm_alloc(ctx, sizeof(*req.users) * (size_t)n);
		req.users_count = n;
		for (int i = 0; i < n; i++)
			req.users[i].name = proto_cstr(users[i]);
	} else {
		req.users_count = -1;
	}
	DescribeUserScramCredentialsResponse resp;
	int16_t v;
	if (adm_any_call(ctx, &adm_api_describe_user_scram_credentials, &req, &resp, &v) < 0)
		return 1;
	if (resp.error_code != 0) {
		adm_error(ctx, "%s", adm_errstr(ctx, resp.error_code, resp.error_message));
		return 1;
	}
	for (int32_t i = 0; i < resp.results_count; i++) {
		const DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult *r =
		    &resp.results[i];
		if (r->error_code != 0) {
			adm_error(ctx, "user '%.*s': %s", (int)r->user.len, r->user.ptr,
				  adm_errstr(ctx, r->error_code, r->error_message));
			continue;
		}
		for (int32_t k = 0; k < r->credential_infos_count; k++)
			printf("User: %.*s\tMechanism: %s\tIterations: %d\n", (int)r->user.len,
			       r->user.ptr, wire_name(r->credential_infos[k].mechanism),
			       (int)r->credential_infos[k].iterations);
	}
	return adm_status(ctx);
}

static int run_scram(adm_ctx *ctx, int argc, char **argv)
{
	adm_getopt_reset();
	static const struct option opts[] = {
		{ "mechanism", required_argument, NULL, 'm' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "password", required_argument, NULL, 'p' },
		{ "password-file", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *mech = NULL, *password = NULL, *password_file = NULL;
	long iterations = DEFAULT_ITERATIONS;
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'm':
			mech = optarg;
			break;
		case 'i':
			if (!adm_parse_int(optarg, 1, INT32_MAX, &iterations))
				return adm_usage(ctx, "--iterations '%s' is not a count", optarg);
			break;
		case 'p':
			password = optarg;
			break;
		case 'f':
			password_file = optarg;
			break;
		default:
			return adm_bad_option(ctx, argv);
		}
	}
	if (optind >= argc)
		return adm_usage(ctx, "set, delete or describe expected");
	const char *action = argv[optind++];
	if (strcmp(action, "describe") == 0) {
		if (mech || password || password_file)
			return adm_usage(ctx, "describe takes user names only");
		return describe(ctx, argc - optind, argv + optind);
	}
	bool set = strcmp(action, "set") == 0;
	if (!set && strcmp(action, "delete") != 0)
		return adm_usage(ctx, "'%s': set, delete or describe expected", action);
	if (argc - optind != 1)
		return adm_usage(ctx, "%s takes one user name", action);
	const char *user = argv[optind];
	if (!mech)
		return adm_usage(ctx, "--mechanism SCRAM-SHA-256 or SCRAM-SHA-512 is required");
	int8_t wire = wire_of(mech);
	if (!wire)
		return adm_usage(ctx, "--mechanism '%s' is not SCRAM-SHA-256 or SCRAM-SHA-512", mech);
	AlterUserScramCredentialsRequest req;
	AlterUserScramCredentialsRequest_init(&req);
	char done[512];
	if (!set) {
		if (password || password_file)
			return adm_usage(ctx, "delete takes no password");
		AlterUserScramCredentialsRequest_ScramCredentialDeletion d;
		AlterUserScramCredentialsRequest_ScramCredentialDeletion_init(&d);
		d.name = proto_cstr(user);
		d.mechanism = wire;
		req.deletions = &d;
		req.deletions_count = 1;
		snprintf(done, sizeof(done), "Deleted the %s credential of user %s.", wire_name(wire),
			 user);
		return alter(ctx, &req, user, done);
	}
	if (!!password == !!password_file)
		return adm_usage(ctx, "set needs --password or --password-file (one of them)");
	char pw[MAX_PASSWORD];
	if (password_file && read_password(password_file, pw, sizeof(pw)) < 0) {
		adm_error(ctx, "--password-file %s: cannot read a line", password_file);
		return 1;
	}
	if (password)
		snprintf(pw, sizeof(pw), "%s", password);
	if (!pw[0]) {
		OPENSSL_cleanse(pw, sizeof(pw));
		return adm_usage(ctx, "the password is empty");
	}
	int m = brk_sasl_mechanism_of(mech, strlen(mech));
	uint8_t salt[SALT_BYTES], salted[BRK_SCRAM_MAX_KEY];
	if (RAND_bytes(salt, sizeof(salt)) != 1 ||
	    brk_scram_salted_password(m, pw, strlen(pw), salt, sizeof(salt), (int32_t)iterations,
				      salted) < 0) {
		OPENSSL_cleanse(pw, sizeof(pw));
		adm_error(ctx, "cannot compute the salted password (OpenSSL)");
		return 1;
	}
	OPENSSL_cleanse(pw, sizeof(pw));
	AlterUserScramCredentialsRequest_ScramCredentialUpsertion u;
	AlterUserScramCredentialsRequest_ScramCredentialUpsertion_init(&u);
	u.name = proto_cstr(user);
	u.mechanism = wire;
	u.iterations = (int32_t)iterations;
	u.salt.ptr = salt;
	u.salt.len = sizeof(salt);
	u.salted_password.ptr = salted;
	u.salted_password.len = (int32_t)brk_scram_key_len(m);
	req.upsertions = &u;
	req.upsertions_count = 1;
	snprintf(done, sizeof(done), "Set the %s credential of user %s (%ld iterations).",
		 wire_name(wire), user, iterations);
	int rc = alter(ctx, &req, user, done);
	OPENSSL_cleanse(salted, sizeof(salted));
	return rc;
}

const adm_command adm_cmd_scram = {
	"scram", "set|delete|describe [USER...] [--mechanism M] [--password P]",
	"set, delete or list users' SCRAM credentials",
	"usage: samsa-admin -b HOST:PORT scram set USER --mechanism M [--iterations N]\n"
	"                                  (--password P | --password-file FILE)\n"
	"       samsa-admin -b HOST:PORT scram delete USER --mechanism M\n"
	"       samsa-admin -b HOST:PORT scram describe [USER...]\n"
	"\n"
	"Users' SCRAM credentials (AlterUserScramCredentials and\n"
	"DescribeUserScramCredentials, KIP-554), what kafka-configs.sh --entity-type\n"
	"users --add-config 'SCRAM-SHA-256=[iterations=N,password=P]' does. The\n"
	"password is salted and hashed here (a random salt, N iterations of PBKDF2):\n"
	"only the result is sent.\n"
	"      --mechanism M        SCRAM-SHA-256 or SCRAM-SHA-512\n"
	"      --iterations N       4096 (the default) to 16384, as Kafka allows\n"
	"      --password P         the password (visible to ps: prefer the file)\n"
	"      --password-file F    the first line of F ('-': standard input)\n"
	"describe prints 'User: U<TAB>Mechanism: M<TAB>Iterations: N' per credential;\n"
	"a user without any is RESOURCE_NOT_FOUND. Alterations go to the controller.\n"
	"The first SCRAM user is made over a connection whose principal may alter the\n"
	"cluster: a super user (e.g. a PLAIN user of the listener's JAAS config).\n",
	run_scram,
};
