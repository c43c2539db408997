// The public header as a C++ program sees it: it must compile cleanly with
// -Wall -Wextra -Wpedantic -Werror (extern "C", no C-only syntax) and its
// functions must link against the shared library by their C names.
#include "simdattn.h"

#include <cstdio>

int main() {
  const char *ok = sa_status_str(SA_OK);
  if (ok == nullptr || ok[0] == '\0') {
    std::fprintf(stderr, "sa_status_str(SA_OK) is empty\n");
    return 1;
  }
  // The scalar set is compiled in everywhere, so there is always one.
  size_t count = sa_kernel_set_count();
  if (count == 0) {
    std::fprintf(stderr, "sa_kernel_set_count() is 0\n");
    return 1;
  }
  const sa_kernel_set *first = sa_kernel_set_at(0);
  if (first == nullptr || sa_kernel_set_at(count) != nullptr ||
      sa_kernel_set_find(first->name) != first) {
    std::fprintf(stderr, "kernel set 0 cannot be found by its own name\n");
    return 1;
  }
  std::printf("C++: %s; %zu kernel sets, the first \"%s\"\n", ok, count,
              first->name);
  return 0;
}
