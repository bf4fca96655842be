/*
 * api.c - the adm_api entries of api.h: thin wrappers that give each
 * generated encoder and decoder the common signature.
 */
#include "tools/api.h"

#define ADM_API(var, key, Name)                                                          \
	static int Name##_enc(proto_writer *w, int16_t version, const void *request)     \
	{                                                                                \
		return Name##Request_encode(w, version, request);                        \
	}                                                                                \
	static int Name##_dec(proto_reader *r, proto_arena *a, int16_t version, void *response) \
	{                                                                                \
		return Name##Response_decode(r, a, version, response);                   \
	}                                                                                \
	const adm_api var = { key, #Name, Name##_enc, Name##_dec };

ADM_API(adm_api_metadata, 3, Metadata)
ADM_API(adm_api_create_topics, 19, CreateTopics)
ADM_API(adm_api_delete_topics, 20, DeleteTopics)
ADM_API(adm_api_describe_configs, 32, DescribeConfigs)
ADM_API(adm_api_describe_log_dirs, 35, DescribeLogDirs)
ADM_API(adm_api_create_partitions, 37, CreatePartitions)
ADM_API(adm_api_elect_leaders, 43, ElectLeaders)
ADM_API(adm_api_incremental_alter_configs, 44, IncrementalAlterConfigs)
ADM_API(adm_api_alter_partition_reassignments, 45, AlterPartitionReassignments)
ADM_API(adm_api_list_partition_reassignments, 46, ListPartitionReassignments)
ADM_API(adm_api_describe_cluster, 60, DescribeCluster)
ADM_API(adm_api_describe_acls, 29, DescribeAcls)
ADM_API(adm_api_create_acls, 30, CreateAcls)
ADM_API(adm_api_delete_acls, 31, DeleteAcls)
ADM_API(adm_api_describe_client_quotas, 48, DescribeClientQuotas)
ADM_API(adm_api_alter_client_quotas, 49, AlterClientQuotas)
ADM_API(adm_api_describe_user_scram_credentials, 50, DescribeUserScramCredentials)
ADM_API(adm_api_alter_user_scram_credentials, 51, AlterUserScramCredentials)
