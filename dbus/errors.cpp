// SPDX-License-Identifier: GPL-2.0-or-later
#include <cerrno>

#include "dbus/loop_backend.h"
#include "dbus/manager_backend.h"

namespace cxiosync::dbus {

ErrorKind errorKindOf(const Error& error) {
  switch (error.code) {
    case EINVAL:
    case ERANGE:
      return ErrorKind::InvalidArgument;
    case ENOENT:
    case ENOTDIR:
      return ErrorKind::NoSuchCgroup;
    case EACCES:
    case EPERM:
      return ErrorKind::AccessDenied;
    case EOPNOTSUPP:
    case ENOSYS:
      return ErrorKind::NotSupported;
    default:
      return ErrorKind::Failed;
  }
}

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidArgument:
      return "org.cxiosync1.Error.InvalidArgument";
    case ErrorKind::NoSuchCgroup:
      return "org.cxiosync1.Error.NoSuchCgroup";
    case ErrorKind::AccessDenied:
      return "org.cxiosync1.Error.AccessDenied";
    case ErrorKind::NotSupported:
      return "org.cxiosync1.Error.NotSupported";
    case ErrorKind::Failed:
      break;
  }
  return "org.cxiosync1.Error.Failed";
}

const char* loopErrorName(const Error& error) {
  switch (error.code) {
    case ENOENT:
    case ENXIO:
      return "org.cxiosync1.Error.NoSuchDevice";
    case EBUSY:
    case EAGAIN:
      return "org.cxiosync1.Error.Busy";
    case EBADF:
      return "org.cxiosync1.Error.InvalidArgument";
    case ENODEV:
      return "org.cxiosync1.Error.NotSupported";
    default:
      break;
  }
  return errorKindName(errorKindOf(error));
}

}  // namespace cxiosync::dbus
