/* An empty shared object: preloaded, it costs what the dynamic loader charges any
 * preloaded object, the floor `tscshim bench --startup` measures the shim's own cost
 * against. */
__attribute__((visibility("default"))) int tscshim_floor_object;
