//===- RoleRegistersTest.cpp - What setmaxnreg can give each role ---------===//
//
// The register pool of a block with pipeline roles (enigma/Support/
// RoleRegisters.h), with counts derived by hand from the sm_90 register
// file (64K registers, allocated per thread in units of 8).
//
//===----------------------------------------------------------------------===//
#include "enigma/Support/RoleRegisters.h"

#include <gtest/gtest.h>

using namespace enigma;

TEST(RoleRegisters, LaunchLimitIsTheRegisterFileSharedInUnitsOf8) {
  EXPECT_EQ(launchRegisterLimit(256), 255); // 256 each, capped at 255
  EXPECT_EQ(launchRegisterLimit(384), 168); // 170.6 -> 168
  EXPECT_EQ(launchRegisterLimit(640), 96);  // 102.4 -> 96 (seen on an H100)
  EXPECT_EQ(allocatedRegisters(255), 256);
  EXPECT_EQ(allocatedRegisters(90), 96);
}

// The configuration that hung on an H100: 512 consumers at 120 and the
// producer warpgroup at 24 need 64512 registers; 640 threads hold 61440.
TEST(RoleRegisters, TheRolesThatHungAreRefusedWithTheNumbers) {
  std::string problem =
      roleRegisterProblem(512, 128, 24, 120, launchRegisterLimit(640));
  EXPECT_NE(problem.find("128 x 24 + 512 x 120 = 64512"), std::string::npos)
      << problem;
  EXPECT_NE(problem.find("640 x 96 = 61440"), std::string::npos) << problem;
}

TEST(RoleRegisters, FittingConsumersUseTheWholePool) {
  EXPECT_EQ(fittingConsumerRegisters(512, 128, 24), 112); // (61440-3072)/512
  EXPECT_EQ(fittingConsumerRegisters(256, 128, 56), 224); // (64512-7168)/256
  EXPECT_EQ(fittingConsumerRegisters(128, 128, 56), 256);
  for (int consumers : {128, 256, 384, 512})
    for (int producer : {24, 40, 56}) {
      int64_t each = fittingConsumerRegisters(consumers, 128, producer);
      EXPECT_EQ(roleRegisterProblem(consumers, 128, producer, each,
                                    launchRegisterLimit(consumers + 128)),
                "")
          << consumers << " consumers, producer " << producer;
      if (each + 8 <= kMaxRoleRegisters)
        EXPECT_NE(roleRegisterProblem(consumers, 128, producer, each + 8,
                                      launchRegisterLimit(consumers + 128)),
                  "")
            << consumers << " consumers, producer " << producer;
    }
}

// The loaded code may use fewer registers than the launch bounds allow;
// then the pool is smaller and roles that the verifier accepted may not
// fit (checked at load time with the driver's count).
TEST(RoleRegisters, TheLoadedCountDecides) {
  EXPECT_EQ(roleRegisterProblem(256, 128, 56, 224, 168), "");
  std::string problem = roleRegisterProblem(256, 128, 56, 224, 150);
  EXPECT_NE(problem.find("384 x 152 = 58368"), std::string::npos) << problem;
  EXPECT_NE(problem.find("150 per thread in the loaded code"),
            std::string::npos)
      << problem;
  // Consumers lowered from a count the code does not have.
  problem = roleRegisterProblem(512, 128, 24, 88, 80);
  EXPECT_NE(problem.find("consumer_registers = 88 is below the 96"),
            std::string::npos)
      << problem;
  EXPECT_EQ(roleRegisterProblem(512, 128, 24, 80, 80), "");
}

TEST(RoleRegisters, SetmaxnregTakesMultiplesOf8From24To256) {
  EXPECT_NE(roleRegisterProblem(256, 128, 20, 224, 168).find(
                "producer_registers = 20"),
            std::string::npos);
  EXPECT_NE(roleRegisterProblem(256, 128, 40, 228, 168).find(
                "consumer_registers = 228"),
            std::string::npos);
  EXPECT_NE(roleRegisterProblem(128, 128, 56, 264, 255).find(
                "consumer_registers = 264"),
            std::string::npos);
}

TEST(RoleRegisters, TheProducerCannotRaiseItsCount) {
  // 128 consumers at 24 leave room, but .dec cannot go from 96 to 104.
  std::string problem = roleRegisterProblem(512, 128, 104, 24, 96);
  EXPECT_NE(problem.find("producer_registers = 104 is more than the 96"),
            std::string::npos)
      << problem;
}
