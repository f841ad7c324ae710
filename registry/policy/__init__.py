"""The registry's rules, pure (no I/O): what may be published, routes, the toolset payload.

* `routes`: `RouteFinder`, identity steps and converters from a version to current.
* `publishing`: `plan_publish` (docs/contract.md "Publishing rule"), `verify_converter`,
  `check_retire`, and the request/outcome Structs.
* `toolset`: the sync payload, whole (`build_toolset`) or in parts rebuilt one
  tool at a time (`build_parts`, `update_parts`, `assemble`).
* `verify`: `verify_listing`, a `tools/list` result against the stored versions.

The service (`registry.api`) runs them on what `registry.store` reads; the
offline `registry check` runs them on a saved toolset. Base install only.
"""
