/* end_txn.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_end_txn(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
