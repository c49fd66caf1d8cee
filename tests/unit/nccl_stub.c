/* A library named like NCCL (soname libnccl.so.2) that tells the version it was built
 * with (NCCL_STUB_VERSION) and has every function libhvd looks up. Only ncclGetVersion
 * is ever called: the tests load it to see which NCCL libhvd picks and what it says. */
#define STUB(name) \
  int name(void) { return 1; /* ncclUnhandledCudaError: never a success */ }

int ncclGetVersion(int* version) {
  *version = NCCL_STUB_VERSION;
  return 0;
}
const char* ncclGetErrorString(int result) {
  (void)result;
  return "stub";
}
STUB(ncclGetLastError)
STUB(ncclGetUniqueId)
STUB(ncclCommInitRank)
STUB(ncclCommDestroy)
STUB(ncclCommAbort)
STUB(ncclGroupStart)
STUB(ncclGroupEnd)
STUB(ncclAllReduce)
STUB(ncclBroadcast)
STUB(ncclReduce)
STUB(ncclAllGather)
STUB(ncclReduceScatter)
STUB(ncclSend)
STUB(ncclRecv)
