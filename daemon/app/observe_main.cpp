#include "daemon/app/observe.h"

int main(int argc, char** argv) {
  return cxiosync::observeMain(argc, argv);
}
