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

const char* loopErrorKindName(LoopErrorKind kind) {
  switch (kind) {
    case LoopErrorKind::InvalidArgument:
      return errorKindName(ErrorKind::InvalidArgument);
    case LoopErrorKind::NoSuchDevice:
      return "org.cxiosync1.Error.NoSuchDevice";
    case LoopErrorKind::AccessDenied:
      return errorKindName(ErrorKind::AccessDenied);
    case LoopErrorKind::Busy:
      return "org.cxiosync1.Error.Busy";
    case LoopErrorKind::NotSupported:
      return errorKindName(ErrorKind::NotSupported);
    case LoopErrorKind::Failed:
      break;
  }
  return errorKindName(ErrorKind::Failed);
}

LoopErrorKind loopErrorKindOf(const Error& error) {
  switch (error.code) {
    case ENOENT:
    case ENXIO:
      return LoopErrorKind::NoSuchDevice;
    case EBUSY:
    case EAGAIN:
      return LoopErrorKind::Busy;
    case EBADF:
      return LoopErrorKind::InvalidArgument;
    case ENODEV:
      return LoopErrorKind::NotSupported;
    default:
      break;
  }
  switch (errorKindOf(error)) {
    case ErrorKind::InvalidArgument:
      return LoopErrorKind::InvalidArgument;
    case ErrorKind::NoSuchCgroup:  // ENOENT/ENOTDIR: a device that is not there
      return LoopErrorKind::NoSuchDevice;
    case ErrorKind::AccessDenied:
      return LoopErrorKind::AccessDenied;
    case ErrorKind::NotSupported:
      return LoopErrorKind::NotSupported;
    case ErrorKind::Failed:
      break;
  }
  return LoopErrorKind::Failed;
}

const char* loopErrorName(const Error& error) {
  return loopErrorKindName(loopErrorKindOf(error));
}

}  // namespace cxiosync::dbus
