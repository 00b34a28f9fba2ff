// Lists the devices rayo sees, the CPU instruction set in use and the thread count.
#include <rayo/rayo.hpp>

#include <iostream>

int main() {
    std::cout << "rayo " << rayo::version_string << "\n\ndevices:\n";
    for (rayo::Device d : rayo::Device::all())
        std::cout << "  " << d.id() << "\t" << to_string(d.kind()) << "\t" << d.name() << "\n";
    try {
        rayo::Device const best = rayo::Device::best();
        std::cout << "best device: " << best.id() << "\n\n";
    } catch (rayo::Error const& e) {  // RAYO_DEVICE names a device this machine does not have
        std::cerr << "rayo-info: " << e.what() << '\n';
        return 2;
    }
    std::cout << "cpu instruction sets available:";
    for (auto a : rayo::available_cpu_archs()) std::cout << ' ' << to_string(a);
    std::cout << "\ncpu instruction set in use: " << to_string(rayo::cpu_arch()) << " (RAYO_CPU_ARCH overrides)\n";
    std::cout << "cpu threads: " << rayo::num_threads() << " (RAYO_NUM_THREADS overrides)\n";
}
