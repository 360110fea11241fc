"""vulture's whitelist for `solver/gpusolve` (pyproject.toml, [tool.vulture]): the names it
reports as unused that something other than the package's own Python code reads.

Never run; vulture reads each `_.name` as a use of `name`, wherever it is defined, so an
entry silences every definition of that name (where two definitions are used in different
ways, the comment says so). tests/test_house_gates.py fails on an entry vulture no longer
reports.
"""

_ = object()

# --- Called by a framework, by name --------------------------------------------------------
# click.Group's hooks, overridden by the lazy command group (cli.py).
_.get_command
_.format_commands
# CP-SAT calls a CpSolverSolutionCallback's method on every solution found.
_.on_solution_callback
# A module's attribute hook (PEP 562): the estimate package's lazy names.
_.__getattr__
# A signal handler's arguments: `signal.signal` passes both.
_.signum
_.frame
# The CEL checker dispatches on the grammar rule's name (`getattr(self, f"_{tree.data}")`,
# rules/check.py).
_._expr
_._conditionalor
_._conditionaland
_._relation
_._addition
_._multiplication
_._unary
_._list_lit
_._map_lit
_._member_object
_._ident
_._member_dot
_._member_index
_._ident_arg
_._member_dot_arg

# --- Attributes set for a library to read --------------------------------------------------
# CP-SAT's SatParameters fields (optimize/).
_.num_workers
_.random_seed
_.catch_sigint_signal
_.cp_model_presolve
_.add_lp_constraints_lazily
_.cp_model_probing_level
_.use_lns
_.shared_tree_num_workers
_.max_deterministic_time
_.relative_gap_limit
_.fix_variables_to_their_hinted_value
_.linearization_level
_.search_branching
# HiGHS's HighsLp fields (optimize/milp/highs.py).
_.num_col_
_.num_row_
_.col_cost_
_.col_lower_
_.col_upper_
_.row_lower_
_.row_upper_
_.format_
_.start_
_.index_
_.value_
_.integrality_
_.offset_

# --- Fields pydantic reads and writes ------------------------------------------------------
# pydantic's own settings, and the `$schema` key (alias) of input documents.
_.model_config
_.schema_
# Fields of the models/ documents: read from the user's and the catalogue's YAML, written to
# the JSON/YAML results and the schemas/ files by pydantic, not by attribute.
_.schema_version
_.base_ghz
_.bgp_lines
_.certifications
_.confidence
_.cores_total
_.cpu
_.export_variant
_.int8
_.memory_source
_.outlets
_.pcie_lanes
_.ram_gb
_.sockets
_.tf32
_.write_gbs
_.rules_judged
_.checkpoint_weights_gb
_.evaluation_h
_.gpu_hours_steady
_.kv_transfer_ms
_.queue_ms
_.rampup_h
_.restart_each_min
_.steady_time_h
_.formula_params
_.full_layers
_.peak_allocated_gb
_.peak_reserved_gb
_.staff_source
_.warranty_source
_.rental_proven_optimal
_.servers_capex
_.unit_value
_.why_not_plans
_.mem_clock_mhz
_.pcie_rx_mbs
_.pcie_tx_mbs
_.tpot_p50_ms
_.tpot_p90_ms
_.tpot_p99_ms
_.ttft_p50_ms
_.ttft_p90_ms
_.ttft_p99_ms
_.documents
_.in_schedule
_.tco_delta  # and optimize/alternatives.py's, read only by tests
# Read by the rules' CEL predicates (rules/*.yaml), not by Python code.
_.long_training_hours
_.min_cpu_ghz
_.min_cpu_pcie_lanes
_.min_host_ram_gb
_.steady_use_fraction

# --- Read by the HTML report's templates (report/templates/) -------------------------------
_.bottom_u
_.height_units
_.dp_comm_total_s  # models/estimate.py's; stepshape.py's is read by name (estimate/report.py)
_.rental_hardware

# --- Read only by tests or benchmarks ------------------------------------------------------
# Nothing in solver/ reads these; the suite (or benchmarks/) does. A candidate for moving
# into the tests' helpers or for deleting with the test that holds it.
_.make_workload  # models/requirements.py: the tests' and benchmarks' workload factory
_.activation_bytes_per_layer  # estimate/activations.py
_.steady_time_s  # estimate/layout.py
_.finish_s  # estimate/loadsim.py
_.published_params_b  # estimate/presets.py
_.measured_mfu  # estimate/calibration.py (and the three below)
_.modelled_mfu
_.measured_activations_bytes
_.modelled_activations_bytes
_.objective_delta  # optimize/alternatives.py (and the next two)
_.cost_delta
_.penalties_delta
_.shape_of  # optimize/patterns.py
_.fill_units  # optimize/patterns.py
_.schedule_model  # optimize/phased/solve.py, benchmarks/
_.standalone_choices  # optimize/search/warmstart.py
_.label_boxes  # report/charts.py
_.forget  # rules/compiled.py: the compiled store emptied between the cache tests

# --- Dead: nothing reads these ------------------------------------------------------------
# Left for their areas' owners to delete; listed so that the gate starts green and the
# list can only shrink.
_.mlp_activation_coeff  # estimate/activations.py
_.kind_of  # load/catalog.py
