/*
 * api.h - the Kafka APIs samsa-admin sends, each an adm_api (conn.h): its
 * key, Kafka's name, and the generated encoder of its request and decoder
 * of its response (protocol/gen/messages.h), behind one signature so that
 * conn.c frames them all the same way. The request and response pointers
 * given to adm_conn_call must be the API's <Name>Request and
 * <Name>Response.
 */
#ifndef SAMSA_TOOLS_API_H
#define SAMSA_TOOLS_API_H

#include "protocol/gen/messages.h"
#include "tools/conn.h"

extern const adm_api adm_api_metadata;                 /* key 3 */
extern const adm_api adm_api_create_topics;            /* key 19 */
extern const adm_api adm_api_delete_topics;            /* key 20 */
extern const adm_api adm_api_describe_configs;         /* key 32 */
extern const adm_api adm_api_describe_log_dirs;        /* key 35 */
extern const adm_api adm_api_create_partitions;        /* key 37 */
extern const adm_api adm_api_elect_leaders;            /* key 43 */
extern const adm_api adm_api_incremental_alter_configs; /* key 44 */
extern const adm_api adm_api_alter_partition_reassignments; /* key 45 */
extern const adm_api adm_api_list_partition_reassignments;  /* key 46 */
extern const adm_api adm_api_describe_cluster;         /* key 60 */
extern const adm_api adm_api_describe_acls;            /* key 29 */
extern const adm_api adm_api_create_acls;              /* key 30 */
extern const adm_api adm_api_delete_acls;              /* key 31 */
extern const adm_api adm_api_describe_client_quotas;   /* key 48 */
extern const adm_api adm_api_alter_client_quotas;      /* key 49 */
extern const adm_api adm_api_describe_user_scram_credentials; /* key 50 */
extern const adm_api adm_api_alter_user_scram_credentials;    /* key 51 */

#endif
