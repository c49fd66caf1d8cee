/*
 * libhvd on an existing MPI communicator. Include after <mpi.h> is available; this is
 * the only public header that uses MPI types.
 */
#ifndef HVD_HVD_MPI_H
#define HVD_HVD_MPI_H

#include <mpi.h>

#include "hvd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Initializes libhvd on comm instead of MPI_COMM_WORLD. The communicator is
 * duplicated: the caller keeps ownership of comm and may free it after this returns.
 * MPI must already be initialized with at least MPI_THREAD_SERIALIZED (libhvd calls
 * MPI from its own thread); a lower level is HVD_ERR_UNSUPPORTED.
 * Idempotent like hvd_init; collective over comm. */
HVD_API hvd_status_t hvd_init_comm(MPI_Comm comm);

/* The same, with the communicator as a Fortran handle (MPI_Comm_c2f), for callers
 * through FFI: MPI_Comm is an int in MPICH and a pointer in Open MPI, the Fortran
 * handle is an int in both. mpi4py: comm.py2f(). */
HVD_API hvd_status_t hvd_init_comm_f(int fortran_handle);

#ifdef __cplusplus
}
#endif

#endif /* HVD_HVD_MPI_H */
