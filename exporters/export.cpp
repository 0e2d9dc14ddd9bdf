#include "exporters/export.hpp"

namespace hetplan::exporters {

ResourceNames default_resource_names() {
  ResourceNames names;
  names.device = {{"ascend", "huawei.com/Ascend910"},
                  {"dcu", "hygon.com/dcu"},
                  {"mlu", "cambricon.com/mlu370"},
                  {"nvidia", "nvidia.com/gpu"}};
  return names;
}

}  // namespace hetplan::exporters
