#include "ptx/kernels/warpgroup_stages.hpp"

namespace rayo::ptx::kernels::warpgroup {

SlotRing SlotRing::make(Kernel& k, Reg barriers, unsigned slots, unsigned consumers, Reg leader) {
    SlotRing ring{.slots = slots, .full = barriers, .empty = k.add(barriers, slots * 8)};
    k.comment("slot ring: " + std::to_string(slots) + " full and empty barriers");
    k.if_then(leader, [&] {
        for (unsigned s = 0; s < slots; ++s) {
            k.mbarrier_init(k.add(ring.full, s * 8), 1);
            k.mbarrier_init(k.add(ring.empty, s * 8), consumers);
        }
        k.fence_mbarrier_init();
    });
    return ring;
}

Reg SlotRing::full_at(Kernel& k, Reg slot) const { return k.add(full, k.shl(slot, 3)); }
Reg SlotRing::empty_at(Kernel& k, Reg slot) const { return k.add(empty, k.shl(slot, 3)); }

Reg RingPosition::slot(Kernel& k, unsigned slots) const { return k.rem(count, slots); }
Reg RingPosition::parity(Kernel& k, unsigned slots) const { return k.and_(k.div(count, slots), 1); }

Reg matrix_descriptor(Kernel& k, Reg shared_address, std::uint64_t bits) {
    Reg const start = k.cvt(Type::u64, k.shr(shared_address, 4));
    return k.or_(start, static_cast<std::int64_t>(bits));
}

TileSchedule TileSchedule::make(Kernel& k, unsigned tile_m, unsigned tile_n, unsigned group_m, Reg m, Reg n,
                                Reg batch) {
    TileSchedule s{.tile_m = tile_m, .tile_n = tile_n, .group_m = group_m};
    // Ceiling divisions that stay right for m or n of 0 (no tiles).
    s.tiles_m = k.div(k.add(m, tile_m - 1), tile_m);
    s.tiles_n = k.div(k.add(n, tile_n - 1), tile_n);
    s.per_product = k.mul(s.tiles_m, s.tiles_n);
    s.total = k.mul(s.per_product, batch);
    return s;
}

TileCoordinates TileSchedule::at(Kernel& k, Reg tile) const {
    TileCoordinates c;
    c.product = k.div(tile, per_product);
    Reg const id = k.sub(tile, k.mul(c.product, per_product));
    Reg const group_width = k.mul(tiles_n, group_m);
    Reg const group = k.div(id, group_width);
    Reg const first_m = k.mul(group, group_m);
    Reg const group_rows = k.min(k.sub(tiles_m, first_m), group_m);
    Reg const in_group = k.sub(id, k.mul(group, group_width));
    c.row0 = k.mul(k.add(first_m, k.rem(in_group, group_rows)), tile_m);
    c.col0 = k.mul(k.div(in_group, group_rows), tile_n);
    return c;
}

void TileSchedule::for_each(Kernel& k, Reg first, Reg stride,
                            std::function<void(TileCoordinates const&)> const& body) const {
    Reg const tile = k.reg(Type::u32);
    k.for_range(tile, first, total, stride, [&] { body(at(k, tile)); });
}

}  // namespace rayo::ptx::kernels::warpgroup
