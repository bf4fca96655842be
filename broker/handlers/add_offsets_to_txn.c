/* add_offsets_to_txn.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_add_offsets_to_txn(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
