// The tests see the program's namespaces (one a folder) as one: a test reads what it checks
// without spelling where each name lives. Only tests include this.
#pragma once

namespace platoon::snapshot {}
namespace platoon::collectors {}
namespace platoon::trace {}
namespace platoon::analysis {}
namespace platoon::metrics {}
namespace platoon::outputs {}
namespace platoon::dashboard {}
namespace platoon::web {}

namespace platoon::tests {
using namespace platoon::snapshot;
using namespace platoon::collectors;
using namespace platoon::trace;
using namespace platoon::analysis;
using namespace platoon::metrics;
using namespace platoon::outputs;
using namespace platoon::dashboard;
using namespace platoon::web;
}  // namespace platoon::tests
