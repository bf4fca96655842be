/* list_transactions.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_list_transactions(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
