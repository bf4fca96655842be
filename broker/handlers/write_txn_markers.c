/* write_txn_markers.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_write_txn_markers(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
