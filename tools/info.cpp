// Lists the devices rayo sees, the CPU instruction set in use and the thread count. Exit code 2
// with the message when rayo cannot start as configured (RAYO_DEVICE naming a device that is not
// there, a bad RAYO_* variable).
#include <rayo/rayo.hpp>

#include <exception>
#include <iostream>

int main() {
    try {
        std::cout << "rayo " << rayo::version_string << "\n\ndevices:\n";
        for (rayo::Device d : rayo::Device::all())
            std::cout << "  " << d.id() << "\t" << to_string(d.kind()) << "\t" << d.name() << "\n";
        rayo::Device const best = rayo::Device::best();
        std::cout << "best device: " << best.id() << "\n\n";
        std::cout << "cpu instruction sets available:";
        for (auto a : rayo::available_cpu_archs()) std::cout << ' ' << to_string(a);
        std::cout << "\ncpu instruction set in use: " << to_string(rayo::cpu_arch()) << " (RAYO_CPU_ARCH overrides)\n";
        std::cout << "cpu threads: " << rayo::num_threads() << " (RAYO_NUM_THREADS overrides)\n";
    } catch (std::exception const& e) {
        std::cout.flush();
        std::cerr << "rayo-info: " << e.what() << '\n';
        return 2;
    }
}
