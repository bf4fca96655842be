/* describe_producers.c - placeholder, being written. */
#include "broker/request.h"

int brk_handle_describe_producers(brk_request *req)
{
	(void)req;
	return BRK_CLOSE;
}
