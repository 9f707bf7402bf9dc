// Release 1.0's functions, which v1.0.0 hosts call in the clock schema
// itself: installed as v1.0.0 installs them, so that a fleet upgrading from
// it runs both releases against one schema (docs/upgrades.md).
#pragma once

#include <string>

namespace clk::store::postgres {

// What COMMENT ON SCHEMA holds once release 1.0's functions are applied (the
// stamp v1.0.0 looks for): "clock functions sha256:<hex of
// sql/postgres/release-1.0/*.sql>".
std::string release_1_0_stamp();

// A DO block that, when the schema's comment is not release_1_0_stamp(),
// drops what v1.0.0 drops, applies sql/postgres/release-1.0 in the schema,
// grants what v1.0.0 grants and writes its stamp: v1.0.0's own block.
std::string release_1_0_block(const std::string& schema);

}  // namespace clk::store::postgres
