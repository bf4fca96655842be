/* txn_offset_commit.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_txn_offset_commit(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
