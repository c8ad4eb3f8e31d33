/**
 * topology/orders.ts pointed at the benchmark's topics, used only while that file does not read
 * ONCEFLOW_ORDERS_INPUT/OUTPUT itself (bench/run.ts prefers the topology file when it does).
 */
import { ORDERS_DEFAULTS, ordersTopology } from '../../topology/orders.ts';

export default ordersTopology({
  input: process.env.ONCEFLOW_ORDERS_INPUT ?? ORDERS_DEFAULTS.input,
  output: process.env.ONCEFLOW_ORDERS_OUTPUT ?? ORDERS_DEFAULTS.output,
});
