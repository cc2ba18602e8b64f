#include "dbus/ctl/json.h"

namespace cxiosync::ctl {

Json& Json::push(Json value) {
  v_.push_back(std::move(value.v_));
  return *this;
}

Json& Json::set(std::string key, Json value) {
  v_[std::move(key)] = std::move(value.v_);
  return *this;
}

}  // namespace cxiosync::ctl
