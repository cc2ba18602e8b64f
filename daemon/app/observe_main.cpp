// SPDX-License-Identifier: GPL-2.0-or-later
#include "daemon/app/observe.h"

int main(int argc, char** argv) {
  return cxiosync::observeMain(argc, argv);
}
