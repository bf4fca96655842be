/*
 * dispatch.c - the API table (request.h): one entry per API key served,
 * the single source for dispatch (conn.c) and for ApiVersions.
 *
 * min_version..max_version are the versions handled and tested;
 * advertised_min is what ApiVersions announces as the lowest. Produce
 * announces 0 although it serves 3+ (KAFKA-18659: Kafka 4 keeps advertising
 * Produce v0-v2 so old clients negotiate, and closes the connection on them).
 * An entry advertised from BRK_NOT_ADVERTISED is served but left out of
 * ApiVersions: ControlledShutdown, which
 * brokers of a ZooKeeper-mode cluster send each other and Kafka 4 (without
 * ZooKeeper) no longer defines.
 */
#include "broker/request.h"

const brk_api brk_apis[BRK_API_KEY_MAX + 1] = {
	[0] = { brk_handle_produce, 3, 13, 0 },        /* Produce */
	[1] = { brk_handle_fetch, 4, 18, 4 },          /* Fetch */
	[2] = { brk_handle_list_offsets, 1, 11, 1 },   /* ListOffsets */
	[3] = { brk_handle_metadata, 0, 13, 0 },       /* Metadata */
	[7] = { brk_handle_controlled_shutdown, 0, 3, BRK_NOT_ADVERTISED }, /* ControlledShutdown */
	[8] = { brk_handle_offset_commit, 2, 10, 2 },  /* OffsetCommit */
	[9] = { brk_handle_offset_fetch, 1, 10, 1 },   /* OffsetFetch */
	[10] = { brk_handle_find_coordinator, 0, 6, 0 }, /* FindCoordinator */
	[11] = { brk_handle_join_group, 0, 9, 0 },     /* JoinGroup */
	[12] = { brk_handle_heartbeat, 0, 4, 0 },      /* Heartbeat */
	[13] = { brk_handle_leave_group, 0, 5, 0 },    /* LeaveGroup */
	[14] = { brk_handle_sync_group, 0, 5, 0 },     /* SyncGroup */
	[15] = { brk_handle_describe_groups, 0, 6, 0 }, /* DescribeGroups */
	[16] = { brk_handle_list_groups, 0, 5, 0 },    /* ListGroups */
	[17] = { brk_handle_sasl_handshake, 0, 1, 0 }, /* SaslHandshake */
	[18] = { brk_handle_api_versions, 0, 4, 0 },   /* ApiVersions */
	[19] = { brk_handle_create_topics, 2, 7, 2 },  /* CreateTopics */
	[20] = { brk_handle_delete_topics, 1, 6, 1 },  /* DeleteTopics */
	[21] = { brk_handle_delete_records, 0, 2, 0 }, /* DeleteRecords */
	[22] = { brk_handle_init_producer_id, 0, 5, 0 }, /* InitProducerId */
	[23] = { brk_handle_offset_for_leader_epoch, 2, 4, 2 }, /* OffsetForLeaderEpoch */
	[24] = { brk_handle_add_partitions_to_txn, 0, 5, 0 }, /* AddPartitionsToTxn */
	[25] = { brk_handle_add_offsets_to_txn, 0, 4, 0 }, /* AddOffsetsToTxn */
	[26] = { brk_handle_end_txn, 0, 5, 0 },        /* EndTxn */
	[27] = { brk_handle_write_txn_markers, 1, 2, 1 }, /* WriteTxnMarkers */
	[28] = { brk_handle_txn_offset_commit, 0, 5, 0 }, /* TxnOffsetCommit */
	[29] = { brk_handle_describe_acls, 1, 3, 1 },  /* DescribeAcls */
	[30] = { brk_handle_create_acls, 1, 3, 1 },    /* CreateAcls */
	[31] = { brk_handle_delete_acls, 1, 3, 1 },    /* DeleteAcls */
	[35] = { brk_handle_describe_log_dirs, 1, 5, 1 }, /* DescribeLogDirs */
	[36] = { brk_handle_sasl_authenticate, 0, 2, 0 }, /* SaslAuthenticate */
	[37] = { brk_handle_create_partitions, 0, 3, 0 }, /* CreatePartitions */
	[32] = { brk_handle_describe_configs, 1, 4, 1 }, /* DescribeConfigs */
	[33] = { brk_handle_alter_configs, 0, 2, 0 },  /* AlterConfigs */
	[42] = { brk_handle_delete_groups, 0, 2, 0 },  /* DeleteGroups */
	[43] = { brk_handle_elect_leaders, 0, 2, 0 },  /* ElectLeaders */
	[44] = { brk_handle_incremental_alter_configs, 0, 1, 0 }, /* IncrementalAlterConfigs */
	[45] = { brk_handle_alter_partition_reassignments, 0, 1, 0 }, /* AlterPartitionReassignments */
	[46] = { brk_handle_list_partition_reassignments, 0, 0, 0 }, /* ListPartitionReassignments */
	[47] = { brk_handle_offset_delete, 0, 0, 0 },  /* OffsetDelete */
	[48] = { brk_handle_describe_client_quotas, 0, 1, 0 }, /* DescribeClientQuotas */
	[49] = { brk_handle_alter_client_quotas, 0, 1, 0 }, /* AlterClientQuotas */
	[50] = { brk_handle_describe_user_scram_credentials, 0, 0, 0 }, /* DescribeUserScramCredentials */
	[51] = { brk_handle_alter_user_scram_credentials, 0, 0, 0 }, /* AlterUserScramCredentials */
	[60] = { brk_handle_describe_cluster, 0, 2, 0 }, /* DescribeCluster */
	[61] = { brk_handle_describe_producers, 0, 0, 0 }, /* DescribeProducers */
	[65] = { brk_handle_describe_transactions, 0, 0, 0 }, /* DescribeTransactions */
	[66] = { brk_handle_list_transactions, 0, 2, 0 }, /* ListTransactions */
	[75] = { brk_handle_describe_topic_partitions, 0, 0, 0 }, /* DescribeTopicPartitions */
};
