/* hvd_mpi.h compiles on its own as C99. */
#include <hvd/hvd_mpi.h>

int main(void) {
  hvd_status_t (*init)(MPI_Comm) = hvd_init_comm;
  hvd_status_t (*init_f)(int) = hvd_init_comm_f;
  return (init != 0 && init_f != 0) ? 0 : 1;
}
